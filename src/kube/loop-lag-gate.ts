/**
 * Admits work while the event loop keeps up. A fan-out to thousands of runtimes with hundreds of
 * reconciles in flight (what real round trips of 20–100 ms need) turns CPU-bound when the
 * round trips are short or the CPU is scarce: every answer queues a callback, the loop runs
 * behind by seconds, and everything sharing it (drift repairs, health probes, the leader's lease
 * renewals) waits as long. The gate keeps the number of admitted tasks where the loop's lag
 * stays near a target, additive increase and multiplicative decrease as TCP does: latency-bound
 * work keeps the full concurrency (the loop idles between answers), CPU-bound work gets just
 * enough to keep the CPU busy, and the loop answers within the target either way. A server that
 * all the work shares (the KCP) answering 429 halves the limit too, at most once a second, so a
 * burst of answers to the requests already in flight counts as one signal, as TCP counts one loss
 * per window; a single runtime's 429s and errors are that runtime's backoff, not the fleet's.
 * Tasks admitted together start a few per turn of the loop (./loop-pacer.ts): each one's start
 * opens a connection, and hundreds back to back would hold the loop as long as a lag would. The
 * pacing is here, not in an agent's `createConnection`: node's agent counts a socket only once it
 * exists, so deferring its creation lets every request in parallel open one past `maxSockets`.
 * When the pacer also paces what the admitted tasks do after each answer (direct mode's calls to
 * runtimes), the turns stay short however much waits, so the lag sampled is the loop's or the
 * oldest wait of such a next step in the pacer, whichever is longer.
 */
import { LoopPacer } from './loop-pacer.js';

/** Something a worker passes before taking work, and leaves after it. */
export interface AdmissionGate {
  /** Resolves once one more task may run: a place under the limit. */
  acquire(): Promise<void>;
  /** Resolves when an admitted task may start: tasks admitted together start over several turns. */
  turn(): Promise<void>;
  release(): void;
}

/** Options of {@link LoopLagGate}. */
export interface LoopLagOptions {
  /** The most tasks admitted at once (the configured concurrency). */
  readonly max: number;
  /** The fewest admitted, however late the loop (default 4, at most `max`). */
  readonly min?: number;
  /** The lag the loop may run behind (default 50 ms). */
  readonly targetLagMs?: number;
  /** How often the lag is sampled (default 20 ms). */
  readonly sampleMs?: number;
  /** The least time between two decreases for {@link LoopLagGate.throttled} (default 1,000 ms). */
  readonly throttleHoldMs?: number;
  /** How long the starts of admitted tasks may take in one turn of the loop (default 4 ms; the gate's own pacer only). */
  readonly turnBudgetMs?: number;
  /** The pacer of the starts, when other work shares its turns (default: one of its own). */
  readonly pacer?: Pick<LoopPacer, 'turn' | 'waitingMs'>;
}

/**
 * The next admission limit after one sample of the loop's lag (pure): halved when the lag is over
 * the target, one more when it is under half the target, unchanged in between.
 */
export function nextLimit(
  limit: number,
  lagMs: number,
  o: Pick<Required<LoopLagOptions>, 'max' | 'min' | 'targetLagMs'>,
): number {
  if (lagMs > o.targetLagMs) return Math.max(o.min, Math.floor(limit / 2));
  if (lagMs < o.targetLagMs / 2) return Math.min(o.max, limit + 1);
  return limit;
}

/** An {@link AdmissionGate} that follows the event loop's lag (see the module comment). */
export class LoopLagGate implements AdmissionGate {
  private readonly o: Required<Omit<LoopLagOptions, 'pacer'>>;
  private limitNow: number;
  private inFlight = 0;
  private readonly waiters: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private lastThrottle = Number.NEGATIVE_INFINITY;
  private readonly pacer: Pick<LoopPacer, 'turn' | 'waitingMs'>;

  constructor(options: LoopLagOptions) {
    const { pacer, ...rest } = options;
    const min = Math.max(1, Math.min(rest.min ?? 4, rest.max));
    this.o = {
      min,
      targetLagMs: 50,
      sampleMs: 20,
      throttleHoldMs: 1_000,
      turnBudgetMs: 4,
      ...rest,
      max: Math.max(min, rest.max),
    };
    this.limitNow = this.o.max;
    this.pacer = pacer ?? new LoopPacer({ turnBudgetMs: this.o.turnBudgetMs });
  }

  /** Starts sampling the loop's lag. */
  start(): void {
    if (this.timer) return;
    let expected = performance.now() + this.o.sampleMs;
    this.timer = setInterval(() => {
      const now = performance.now();
      // Work waiting in the pacer (answers whose callers wait for a turn) is late too.
      this.sample(Math.max(0, now - expected, this.pacer.waitingMs()));
      expected = now + this.o.sampleMs;
    }, this.o.sampleMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Feeds one lag sample (ms): the timer's, or a test's. */
  sample(lagMs: number): void {
    this.limitNow = nextLimit(this.limitNow, lagMs, this.o);
    this.wake();
  }

  /**
   * A shared server refused a request as too many (HTTP 429) at `now` (ms, `performance.now()`):
   * the limit halves, unless it did so less than `throttleHoldMs` ago.
   */
  throttled(now: number = performance.now()): void {
    if (now - this.lastThrottle < this.o.throttleHoldMs) return;
    this.lastThrottle = now;
    this.limitNow = Math.max(this.o.min, Math.floor(this.limitNow / 2));
  }

  /** How many tasks may run at once now. */
  get limit(): number {
    return this.limitNow;
  }

  /** How many hold a place now (a task running, or a worker that has yet to take one). */
  get running(): number {
    return this.inFlight;
  }

  /** Resolves once one more task may run: a place under the limit. */
  async acquire(): Promise<void> {
    if (this.inFlight < this.limitNow) this.inFlight++;
    else await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /**
   * Resolves on a turn of the loop with time left for an admitted task's start
   * (./loop-pacer.ts), so tasks let in together start over several turns.
   */
  turn(): Promise<void> {
    return this.pacer.turn();
  }

  release(): void {
    this.inFlight--;
    this.wake();
  }

  private wake(): void {
    while (this.inFlight < this.limitNow && this.waiters.length > 0) {
      this.inFlight++;
      this.waiters.shift()?.();
    }
  }
}
