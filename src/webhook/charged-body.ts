import type { IncomingMessage } from 'node:http';
import { BodyTooLargeError } from '../drift/limited-body.js';
import { BudgetRefusedError, type Budget, type BudgetLease } from './budget.js';

/** How a charged read ended without a body. */
export type ChargedReadFailure =
  | { readonly kind: 'too-large'; readonly error: BodyTooLargeError }
  /** The body was not complete at the deadline (a trickle, or a length declared and not sent). */
  | { readonly kind: 'deadline' }
  /** No room in the budget for the bytes that arrived (see {@link BudgetRefusedError}). */
  | { readonly kind: 'no-room'; readonly error: BudgetRefusedError }
  /** The client went away, or the stream failed. */
  | { readonly kind: 'gone'; readonly cause: unknown };

/** Where a request stands among those reading, for {@link readChargedBody}. */
export interface ReadTurn {
  /** Whether it is the oldest request reading: that one reads on whatever the budget holds. */
  readonly oldest: () => boolean;
  /** Set by the reader while it waits; called when the request becomes the oldest. */
  onOldest: (() => void) | undefined;
}

/** A read body and its bytes' room in the budget, to give back once the body is accounted elsewhere. */
export interface ChargedBody {
  readonly body: Buffer;
  readonly release: () => void;
}

/** Thrown by {@link readChargedBody}. */
export class ChargedReadError extends Error {
  override readonly name = 'ChargedReadError';

  constructor(
    readonly failure: ChargedReadFailure,
    options?: ErrorOptions,
  ) {
    super(`request body not read: ${failure.kind}`, options);
  }
}

/**
 * Reads a request body of at most `limit` bytes, counting each chunk's bytes in `budget` as it
 * arrives (not the length the client declares, which costs nothing to lie about). While the
 * budget is over its size, an incomplete body's stream is paused (Node stops reading the socket,
 * TCP holds the rest in the client) until enough is given back: what is read beyond the budget
 * is at most one chunk per paused request, and the body of the oldest request reading, which is
 * never paused (otherwise bodies all paused part-read would wait for each other until their
 * deadline). Whatever happens, the body must be complete by `deadline`
 * (`Date.now()` clock): a client that declares a length and sends it slowly, or not at all,
 * holds what it sent only until then.
 */
export function readChargedBody(
  req: IncomingMessage,
  limit: number,
  budget: Budget,
  deadline: number,
  /** The declared length (-1 for none). */
  declared: number,
  turn: ReadTurn,
): Promise<ChargedBody> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const leases: BudgetLease[] = [];
    let size = 0;
    let waiting = 0;
    let ended = false;
    let done = false;
    const gone = new AbortController();
    const releaseAll = (): void => {
      for (const lease of leases.splice(0)) lease.release();
    };
    const cleanup = (): void => {
      done = true;
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const fail = (failure: ChargedReadFailure, cause?: unknown): void => {
      if (done) return;
      cleanup();
      gone.abort();
      releaseAll();
      reject(new ChargedReadError(failure, cause === undefined ? undefined : { cause }));
    };
    const finish = (): void => {
      if (done || !ended || waiting > 0) return;
      cleanup();
      // A small body (an AdmissionReview) usually arrives in one chunk: no copy.
      const body = chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks, size);
      resolve({ body, release: releaseAll });
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        // The rest is discarded, so the peer can read our 413 rather than hit a reset.
        req.off('data', onData);
        req.resume();
        fail({ kind: 'too-large', error: new BodyTooLargeError(limit) });
        return;
      }
      chunks.push(chunk);
      // The chunk is in memory already: it is counted whether it fits or not. Waiting could only
      // stop the next one, so a body complete with this chunk (the API server's, usually in one)
      // goes on at once; an incomplete one stops reading until the budget is back under its size.
      leases.push(budget.tryAcquire([chunk.length]) ?? budget.force([chunk.length]));
      // The oldest reader goes on too: were every body paused part-read, none would ever complete.
      if (size === declared || turn.oldest()) return;
      const room = budget.tryAcquire([0]);
      if (room) return;
      waiting++;
      req.pause();
      const oldest = new AbortController();
      turn.onOldest = () => {
        oldest.abort();
      };
      const goOn = (): void => {
        waiting--;
        turn.onOldest = undefined;
        if (done) return;
        req.resume();
        finish();
      };
      budget
        .acquire([0], { deadline, signal: AbortSignal.any([gone.signal, oldest.signal]) })
        .then(goOn, (error: unknown) => {
          if (oldest.signal.aborted && !gone.signal.aborted) {
            goOn();
            return;
          }
          waiting--;
          turn.onOldest = undefined;
          if (error instanceof BudgetRefusedError && error.reason === 'timeout') fail({ kind: 'deadline' });
          else if (error instanceof BudgetRefusedError && error.reason !== 'aborted')
            fail({ kind: 'no-room', error });
        });
    };
    const onEnd = (): void => {
      ended = true;
      finish();
    };
    const onError = (cause: unknown): void => {
      fail({ kind: 'gone', cause }, cause);
    };
    const onClose = (): void => {
      if (!ended) fail({ kind: 'gone', cause: undefined });
    };
    const timer = setTimeout(
      () => {
        fail({ kind: 'deadline' });
      },
      Math.max(0, deadline - Date.now()),
    );
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}
