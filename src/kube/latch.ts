/**
 * A one-shot latch: waiters resolve when it opens, reject when it fails, and may
 * give up early through an AbortSignal without leaking listeners. Used for
 * "has synced" style waits.
 */

/** Rejection of {@link Latch.wait} when its signal aborts. */
export class LatchWaitAbortedError extends Error {
  override readonly name = 'LatchWaitAbortedError';
}

interface Waiter {
  resolve(): void;
  reject(err: Error): void;
}

/** Opens (or fails) once; every past and future waiter sees the outcome. */
export class Latch {
  private state: 'pending' | 'open' | 'failed' = 'pending';
  private failure: Error | undefined;
  private waiters = new Set<Waiter>();

  /** Whether it has opened. */
  isOpen(): boolean {
    return this.state === 'open';
  }

  /** Open it: resolve every waiter. No effect once settled. */
  open(): void {
    if (this.state !== 'pending') return;
    this.state = 'open';
    for (const w of this.waiters) w.resolve();
    this.waiters.clear();
  }

  /** Fail it: reject every waiter with `err`. No effect once settled. */
  fail(err: Error): void {
    if (this.state !== 'pending') return;
    this.state = 'failed';
    this.failure = err;
    for (const w of this.waiters) w.reject(err);
    this.waiters.clear();
  }

  /** Resolves when open; rejects if it failed or `signal` aborts first. */
  wait(signal?: AbortSignal): Promise<void> {
    if (this.state === 'open') return Promise.resolve();
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (signal?.aborted === true) return Promise.reject(abortError(signal));
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.waiters.delete(waiter);
        reject(abortError(signal));
      };
      const waiter: Waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      this.waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function abortError(signal: AbortSignal | undefined): Error {
  return new LatchWaitAbortedError('wait aborted', { cause: signal?.reason });
}
