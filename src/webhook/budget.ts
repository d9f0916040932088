/** Why a request got no room in a {@link Budget}. */
export class BudgetRefusedError extends Error {
  override readonly name = 'BudgetRefusedError';

  constructor(
    /** `never`: it asks more than the whole budget; `queue-full`; `timeout`; `aborted`. */
    readonly reason: 'never' | 'queue-full' | 'timeout' | 'aborted',
    message: string,
  ) {
    super(message);
  }
}

/** Room taken from a budget; give it back with `release`, part of it with `shrink`. */
export interface BudgetLease {
  /** Gives back everything still held (once; later calls do nothing). */
  release(): void;
  /** Keeps only `weights` (each at most what is held) and gives back the rest. */
  shrink(weights: readonly number[]): void;
}

interface Waiter {
  readonly weights: readonly number[];
  readonly grant: (lease: BudgetLease) => void;
  readonly refuse: (error: BudgetRefusedError) => void;
  timer: NodeJS.Timeout | undefined;
  onAbort: (() => void) | undefined;
  signal: AbortSignal | undefined;
}

/** Options of one acquisition. */
export interface AcquireOptions {
  /** Give up at this time (`Date.now()` clock); default: wait as long as it takes. */
  readonly deadline?: number;
  /** Give up when aborted (the client went away). */
  readonly signal?: AbortSignal;
}

/**
 * Room in several dimensions at once (e.g. requests and bytes), taken and given back by
 * weight. A request takes all its dimensions together or waits; waiters are served first fit
 * in arrival order, so a small request passes a large one that does not fit yet (the large one
 * gets room as soon as enough is given back: what is held is always given back, whatever waits).
 */
export class Budget {
  private readonly used: number[];
  private readonly waiters: Waiter[] = [];

  constructor(
    private readonly capacities: readonly number[],
    /** Waiters beyond this are refused at once. */
    private readonly maxWaiters: number,
  ) {
    this.used = capacities.map(() => 0);
  }

  /** What is taken now, per dimension. */
  get inUse(): readonly number[] {
    return this.used;
  }

  /** How many wait. */
  get waiting(): number {
    return this.waiters.length;
  }

  /**
   * Takes `weights` now, or undefined when they do not fit. Passing those who wait is first fit:
   * every give-back admits each waiter that fits, so none that waits fits at this moment.
   */
  tryAcquire(weights: readonly number[]): BudgetLease | undefined {
    return this.fits(weights) ? this.take(weights) : undefined;
  }

  /**
   * Takes `weights` whether they fit or not: for what is in memory already and must be counted
   * (a chunk read off a socket). Waiters get no room until enough is given back.
   */
  force(weights: readonly number[]): BudgetLease {
    return this.take(weights);
  }

  /** Takes `weights`, waiting for room if needed; rejects with {@link BudgetRefusedError}. */
  acquire(weights: readonly number[], options: AcquireOptions = {}): Promise<BudgetLease> {
    if (weights.some((w, i) => w > (this.capacities[i] ?? 0)))
      return Promise.reject(new BudgetRefusedError('never', 'asks more than the whole budget'));
    const now = this.tryAcquire(weights);
    if (now) return Promise.resolve(now);
    if (options.signal?.aborted === true)
      return Promise.reject(new BudgetRefusedError('aborted', 'the request went away'));
    if (this.waiters.length >= this.maxWaiters)
      return Promise.reject(new BudgetRefusedError('queue-full', 'too many requests wait'));
    return new Promise<BudgetLease>((resolve, reject) => {
      const waiter: Waiter = {
        weights,
        grant: resolve,
        refuse: reject,
        timer: undefined,
        onAbort: undefined,
        signal: options.signal,
      };
      if (options.deadline !== undefined) {
        waiter.timer = setTimeout(
          () => {
            this.drop(waiter, new BudgetRefusedError('timeout', 'no room in time'));
          },
          Math.max(0, options.deadline - Date.now()),
        );
      }
      if (options.signal) {
        waiter.onAbort = () => {
          this.drop(waiter, new BudgetRefusedError('aborted', 'the request went away'));
        };
        options.signal.addEventListener('abort', waiter.onAbort, { once: true });
      }
      this.waiters.push(waiter);
    });
  }

  private fits(weights: readonly number[]): boolean {
    return weights.every((w, i) => (this.used[i] ?? 0) + w <= (this.capacities[i] ?? 0));
  }

  private take(weights: readonly number[]): BudgetLease {
    const held = [...weights];
    held.forEach((w, i) => {
      this.used[i] = (this.used[i] ?? 0) + w;
    });
    const giveBack = (amounts: readonly number[]): void => {
      amounts.forEach((w, i) => {
        this.used[i] = (this.used[i] ?? 0) - w;
        held[i] = (held[i] ?? 0) - w;
      });
      this.admitWaiters();
    };
    return {
      release: () => {
        giveBack([...held]);
      },
      shrink: (keep) => {
        giveBack(held.map((h, i) => Math.max(0, h - Math.min(h, keep[i] ?? 0))));
      },
    };
  }

  private admitWaiters(): void {
    for (let i = 0; i < this.waiters.length;) {
      const waiter = this.waiters[i];
      if (waiter && this.fits(waiter.weights)) {
        this.waiters.splice(i, 1);
        this.settle(waiter);
        waiter.grant(this.take(waiter.weights));
      } else i++;
    }
  }

  private drop(waiter: Waiter, error: BudgetRefusedError): void {
    const i = this.waiters.indexOf(waiter);
    if (i === -1) return;
    this.waiters.splice(i, 1);
    this.settle(waiter);
    waiter.refuse(error);
  }

  private settle(waiter: Waiter): void {
    if (waiter.timer) clearTimeout(waiter.timer);
    if (waiter.onAbort) waiter.signal?.removeEventListener('abort', waiter.onAbort);
  }
}
