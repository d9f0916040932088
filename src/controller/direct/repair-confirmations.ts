/** Timer functions, injectable for tests. */
export interface ConfirmationClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const systemClock: ConfirmationClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (handle) => {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

interface Pending {
  timer: unknown;
  firstEventAt: number;
  lastEventAt: number;
}

/**
 * Schedules the confirmation that follows drift repairs: `run(key)` at least `delayMs` after the
 * LAST event of a key (a drift report arrives before its write is stored, so the confirmation
 * must come after the last write, not after the first), and during a long stream of events
 * at least every `maxWaitMs`, so a flooding runtime cannot postpone it for ever.
 */
export class RepairConfirmations {
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly delayMs: number,
    private readonly run: (key: string) => void,
    private readonly maxWaitMs = 10 * delayMs,
    private readonly clock: ConfirmationClock = systemClock,
  ) {}

  /** A drift event for `key` arrived now. */
  event(key: string): void {
    const now = this.clock.now();
    const p = this.pending.get(key);
    if (p) {
      p.lastEventAt = now;
      return;
    }
    this.pending.set(key, {
      firstEventAt: now,
      lastEventAt: now,
      timer: this.clock.setTimeout(() => {
        this.fire(key);
      }, this.delayMs),
    });
  }

  /** How many keys wait for their confirmation. */
  get size(): number {
    return this.pending.size;
  }

  /** Cancels every pending confirmation. */
  stop(): void {
    for (const p of this.pending.values()) this.clock.clearTimeout(p.timer);
    this.pending.clear();
  }

  private fire(key: string): void {
    const p = this.pending.get(key);
    if (!p) return;
    const now = this.clock.now();
    const due = p.lastEventAt + this.delayMs;
    if (now >= due) {
      this.pending.delete(key);
      this.run(key);
      return;
    }
    if (now - p.firstEventAt >= this.maxWaitMs) {
      this.run(key);
      p.firstEventAt = now;
    }
    p.timer = this.clock.setTimeout(() => {
      this.fire(key);
    }, due - now);
  }
}
