import type { IncomingMessage } from 'node:http';
import { BodyTooLargeError, declaredLength } from '../drift/limited-body.js';
import { Budget, BudgetRefusedError, type BudgetLease } from './budget.js';
import { ChargedReadError, readChargedBody, type ChargedBody, type ReadTurn } from './charged-body.js';
import { decodeCost } from './decode-cost.js';

/** The gate's limits (defaults in ../api/serving-limits.ts). */
export interface GateLimits {
  readonly bodyLimitBytes: number;
  readonly readBudgetBytes: number;
  readonly maxRequests: number;
  readonly decodeBudgetBytes: number;
  readonly maxWaiting: number;
  readonly queueTimeoutMs: number;
  /** A body not complete this long after its headers is refused (408). */
  readonly bodyTimeoutMs: number;
}

/** Why a request was not let through: the `reason` label of the refusal counter. */
export type GateRefusalReason =
  'too_large' | 'too_complex' | 'queue_full' | 'timeout' | 'body_timeout' | 'gone';

/** A request the gate refuses, with the answer it gets. */
export class GateRefusal extends Error {
  override readonly name = 'GateRefusal';

  constructor(
    readonly reason: GateRefusalReason,
    /** 408, 413, 503, or 0 when the client went away (nothing to answer). */
    readonly status: 408 | 413 | 503 | 0,
    message: string,
    /** The body was not read: close the connection rather than read it to keep the connection. */
    readonly closeConnection: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A body let through: release once the answer is written (or the connection is gone). */
export interface AdmittedBody {
  readonly body: Buffer;
  readonly release: () => void;
}

/**
 * Bounds what requests can take, whatever clients send or only claim to send, in two steps:
 *
 * 1. reading: each chunk of a body is counted in {@link GateLimits.readBudgetBytes} as it
 *    arrives (./charged-body.ts); a declared length costs nothing, so a client that declares
 *    8 MiB and sends nothing holds nothing. While the budget is full, incomplete bodies stop
 *    being read (Node stops reading the socket; TCP makes the client wait); a body complete in
 *    the chunk that arrived goes on, and so does the oldest request reading, so that some body
 *    always completes. The body must be complete
 *    {@link GateLimits.bodyTimeoutMs} after the headers (the API server sends it at once), or
 *    the request is refused (408) and what it read given back;
 * 2. deciding: once read, the body takes one of {@link GateLimits.maxRequests} places and its
 *    estimated decode cost (./decode-cost.ts) from {@link GateLimits.decodeBudgetBytes}, and
 *    gives its read bytes back. Only complete bodies hold places, so clients that send nothing
 *    hold none.
 *
 * Holders of step 2 never wait for step 1, so what is held is always given back. A request
 * that has no room {@link GateLimits.queueTimeoutMs} after its headers, or finds too many
 * waiting, is refused (503); one that could never fit, 413.
 */
export class RequestGate {
  private readonly reading: Budget;
  private readonly deciding: Budget;
  /** Requests reading their body, oldest first. */
  private readonly readers = new Set<ReadTurn>();

  constructor(private readonly limits: GateLimits) {
    this.reading = new Budget([limits.readBudgetBytes], limits.maxWaiting);
    this.deciding = new Budget([limits.maxRequests, limits.decodeBudgetBytes], limits.maxWaiting);
  }

  /** Requests past step 1, bytes read and held, estimated decode bytes held; requests waiting. */
  get state(): { inFlight: number; readBytes: number; decodeBytes: number; waiting: number } {
    const [inFlight = 0, decodeBytes = 0] = this.deciding.inUse;
    return {
      inFlight,
      readBytes: this.reading.inUse[0] ?? 0,
      decodeBytes,
      waiting: this.reading.waiting + this.deciding.waiting,
    };
  }

  /** Reads the body of `req` within the limits; rejects with {@link GateRefusal} or a read error. */
  async admit(req: IncomingMessage): Promise<AdmittedBody> {
    const limit = this.limits.bodyLimitBytes;
    const declared = declaredLength(req);
    if (declared > limit) {
      throw new GateRefusal('too_large', 413, new BodyTooLargeError(limit).message, true);
    }
    const arrived = Date.now();
    const deadline = arrived + Math.min(this.limits.bodyTimeoutMs, this.limits.queueTimeoutMs);
    const readers = this.readers;
    const turn: ReadTurn = {
      oldest: () => readers.values().next().value === turn,
      onOldest: undefined,
    };
    readers.add(turn);
    let read: ChargedBody;
    try {
      read = await readChargedBody(req, limit, this.reading, deadline, declared, turn);
    } catch (error) {
      throw readRefusal(error);
    } finally {
      const wasOldest = turn.oldest();
      readers.delete(turn);
      if (wasOldest) readers.values().next().value?.onOldest?.();
    }
    try {
      const lease = await this.take(this.deciding, [1, decodeCost(read.body)], req, arrived);
      return {
        body: read.body,
        release: () => {
          lease.release();
        },
      };
    } finally {
      read.release();
    }
  }

  private async take(
    budget: Budget,
    weights: readonly number[],
    req: IncomingMessage,
    arrived: number,
  ): Promise<BudgetLease> {
    // The common case: room at once, no timer and no listener.
    const now = budget.tryAcquire(weights);
    if (now) return now;
    const gone = new AbortController();
    const onClose = (): void => {
      gone.abort();
    };
    req.socket.once('close', onClose);
    try {
      return await budget.acquire(weights, {
        deadline: arrived + this.limits.queueTimeoutMs,
        signal: gone.signal,
      });
    } catch (error) {
      throw refusalOf(error);
    } finally {
      req.socket.off('close', onClose);
    }
  }
}

function readRefusal(error: unknown): unknown {
  if (!(error instanceof ChargedReadError)) return error;
  const failure = error.failure;
  switch (failure.kind) {
    case 'too-large':
      return new GateRefusal('too_large', 413, failure.error.message, true, { cause: error });
    case 'deadline':
      return new GateRefusal('body_timeout', 408, 'request body not received in time', true, {
        cause: error,
      });
    case 'no-room':
      return failure.error.reason === 'queue-full'
        ? new GateRefusal('queue_full', 503, 'too many requests waiting', true, { cause: error })
        : new GateRefusal('too_large', 413, 'request body too large', true, { cause: error });
    case 'gone':
      return new GateRefusal('gone', 0, 'the client went away', true, { cause: error });
  }
}

/** The refusal of a read body that found no room to be decided. */
function refusalOf(error: unknown): unknown {
  if (!(error instanceof BudgetRefusedError)) return error;
  switch (error.reason) {
    case 'never':
      return new GateRefusal('too_complex', 413, 'request body too complex to decode', false, {
        cause: error,
      });
    case 'queue-full':
      return new GateRefusal('queue_full', 503, 'too many requests waiting', false, { cause: error });
    case 'timeout':
      return new GateRefusal('timeout', 503, 'no room for the request in time', false, { cause: error });
    case 'aborted':
      return new GateRefusal('gone', 0, 'the client went away', true, { cause: error });
  }
}
