import type { IncomingMessage } from 'node:http';
import { BodyTooLargeError, declaredLength, readLimitedBody } from '../watcher/limited-body.js';
import { Budget, BudgetRefusedError, type BudgetLease } from './budget.js';
import { decodeCost } from './decode-cost.js';

/** The gate's limits (defaults in ./serving-limits.ts). */
export interface GateLimits {
  readonly bodyLimitBytes: number;
  readonly readBudgetBytes: number;
  readonly maxRequests: number;
  readonly decodeBudgetBytes: number;
  readonly maxWaiting: number;
  readonly queueTimeoutMs: number;
}

/** Why a request was not let through: the `reason` label of the refusal counter. */
export type GateRefusalReason = 'too_large' | 'too_complex' | 'queue_full' | 'timeout' | 'gone';

/** A request the gate refuses, with the answer it gets. */
export class GateRefusal extends Error {
  override readonly name = 'GateRefusal';

  constructor(
    readonly reason: GateRefusalReason,
    /** 413, 503, or 0 when the client went away (nothing to answer). */
    readonly status: 413 | 503 | 0,
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
 * Bounds what request bodies can take, whatever clients send, in two steps:
 *
 * 1. reading: a request takes one of {@link GateLimits.maxRequests} places and its declared
 *    length (the body limit when it declares none) from {@link GateLimits.readBudgetBytes}
 *    before a byte of its body is read. Until then its body stays unread: Node stops reading the
 *    socket once its small buffer is full, and TCP makes the client wait;
 * 2. decoding: once read, the body takes its estimated decode cost (./decode-cost.ts) from
 *    {@link GateLimits.decodeBudgetBytes}, and gives its read bytes back.
 *
 * Holders of step 2 never wait for step 1, so what is held is always given back. A request
 * that waits longer than {@link GateLimits.queueTimeoutMs}, or finds too many waiting, is
 * refused (503); one that could never fit, 413.
 */
export class RequestGate {
  private readonly reading: Budget;
  private readonly decoding: Budget;

  constructor(private readonly limits: GateLimits) {
    this.reading = new Budget([limits.maxRequests, limits.readBudgetBytes], limits.maxWaiting);
    this.decoding = new Budget([limits.decodeBudgetBytes], limits.maxWaiting);
  }

  /** Requests past step 1 and bytes reserved for reading; requests waiting. */
  get state(): { inFlight: number; readBytes: number; decodeBytes: number; waiting: number } {
    const [inFlight = 0, readBytes = 0] = this.reading.inUse;
    return {
      inFlight,
      readBytes,
      decodeBytes: this.decoding.inUse[0] ?? 0,
      waiting: this.reading.waiting + this.decoding.waiting,
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
    const readLease = await this.take(this.reading, [1, declared >= 0 ? declared : limit], req, arrived);
    let decodeLease: BudgetLease | undefined;
    try {
      let body: Buffer;
      try {
        body = await readLimitedBody(req, limit);
      } catch (error) {
        if (error instanceof BodyTooLargeError)
          throw new GateRefusal('too_large', 413, error.message, true, { cause: error });
        throw error;
      }
      decodeLease = await this.take(this.decoding, [decodeCost(body)], req, arrived);
      readLease.shrink([1, 0]);
      const lease = decodeLease;
      return {
        body,
        release: () => {
          readLease.release();
          lease.release();
        },
      };
    } catch (error) {
      readLease.release();
      throw error;
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
      throw refusalOf(error, budget === this.decoding);
    } finally {
      req.socket.off('close', onClose);
    }
  }
}

function refusalOf(error: unknown, decoding: boolean): unknown {
  if (!(error instanceof BudgetRefusedError)) return error;
  // Before decoding the body is unread: the connection is closed rather than read to the end.
  const unread = !decoding;
  switch (error.reason) {
    case 'never':
      return decoding
        ? new GateRefusal('too_complex', 413, 'request body too complex to decode', false, { cause: error })
        : new GateRefusal('too_large', 413, 'request body too large', true, { cause: error });
    case 'queue-full':
      return new GateRefusal('queue_full', 503, 'too many requests waiting', unread, { cause: error });
    case 'timeout':
      return new GateRefusal('timeout', 503, 'no room for the request in time', unread, { cause: error });
    case 'aborted':
      return new GateRefusal('gone', 0, 'the client went away', true, { cause: error });
  }
}
