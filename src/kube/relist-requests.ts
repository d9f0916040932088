/**
 * On-demand relists of a reflector: "list again now, and tell me once a list that started after
 * I asked is stored". That is the proof a cache is at least as new as the API server's state at
 * the moment of asking (e.g. on gaining leadership), which a cache fed by a watch cannot give:
 * after a partition its watch may still be backing off, far behind.
 *
 * The reflector numbers its lists; a request made while list n was the latest started is served
 * once a list numbered above n is stored. List n itself never counts: the server may have
 * answered it before the request. A request ends the watch in flight and a backoff sleep, so
 * the fresh list starts at once.
 */
import { setTimeout as delay } from 'node:timers/promises';

/** Why a watch was ended by a relist request. */
class RelistRequested extends Error {
  override readonly name = 'RelistRequested';
}

interface Waiter {
  /** Number of the latest list started when the request was made. */
  readonly after: number;
  resolve(): void;
  reject(err: Error): void;
}

/** The abort reason itself when it is an Error (e.g. "leadership lost"), else one wrapping it. */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new Error('relist wait aborted', { cause: reason });
}

/** The relist requests of one reflector; the reflector reports its lists, watches and sleeps. */
export class RelistRequests {
  private started = 0;
  private failure: Error | undefined;
  private readonly waiters = new Set<Waiter>();
  private watch: AbortController | undefined;
  private nap: AbortController | undefined;
  /** Requested and no list started since: the next backoff sleep is skipped. */
  private wake = false;

  /** Asks for a fresh list; resolves once one started after this call is stored, rejects on abort or fail. */
  request(signal?: AbortSignal): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (signal?.aborted === true) return Promise.reject(abortReason(signal));
    const served = new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.waiters.delete(waiter);
        if (signal) reject(abortReason(signal));
      };
      const settle = (): void => {
        this.waiters.delete(waiter);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        after: this.started,
        resolve: () => {
          settle();
          resolve();
        },
        reject: (err) => {
          settle();
          reject(err);
        },
      };
      this.waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    this.wake = true;
    this.watch?.abort(new RelistRequested('relist requested'));
    this.nap?.abort();
    return served;
  }

  /** Whether a request still waits for its list: the reflector must list before it watches. */
  pending(): boolean {
    return this.waiters.size > 0;
  }

  /** A list starts: returns its number, for {@link listStored}. */
  listStarted(): number {
    this.wake = false;
    return ++this.started;
  }

  /** List `n` is stored and its changes dispatched: every request made before it started is served. */
  listStored(n: number): void {
    for (const w of [...this.waiters]) if (w.after < n) w.resolve();
  }

  /** A watch runs under `ac` until {@link watchEnded}; a request aborts it. */
  watchStarted(ac: AbortController): void {
    this.watch = ac;
  }

  watchEnded(ac: AbortController): void {
    if (this.watch === ac) this.watch = undefined;
  }

  /** Whether the watch under `signal` was ended by a request (a list must follow at once). */
  endedBy(signal: AbortSignal): boolean {
    return signal.reason instanceof RelistRequested;
  }

  /** Waits `ms`, or less when `lifetime` aborts or a request comes; not at all if one is pending. */
  async sleep(ms: number, lifetime: AbortSignal): Promise<void> {
    if (this.wake || lifetime.aborted) return;
    const nap = new AbortController();
    this.nap = nap;
    // A listener removed afterwards rather than AbortSignal.any: nothing stays attached to the
    // long-lived lifetime signal however many sleeps there are.
    const wakeUp = (): void => {
      nap.abort();
    };
    lifetime.addEventListener('abort', wakeUp, { once: true });
    try {
      await delay(ms, undefined, { signal: nap.signal }).catch(() => undefined);
    } finally {
      lifetime.removeEventListener('abort', wakeUp);
      if (this.nap === nap) this.nap = undefined;
    }
  }

  /** No list will come any more (stopped): every request, present and future, rejects with `err`. */
  failAll(err: Error): void {
    this.failure ??= err;
    for (const w of [...this.waiters]) w.reject(err);
  }
}
