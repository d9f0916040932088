/** The fewest callbacks a turn queues while callers wait. */
const MIN_SLOTS = 8;

/** Options of {@link LoopPacer}. */
export interface LoopPacerOptions {
  /** How long the work let through may take in one turn of the event loop (default 4 ms). */
  readonly turnBudgetMs?: number;
  readonly now?: () => number;
}

/**
 * Spreads the starts of work over turns of the event loop. A fan-out that starts hundreds of
 * tasks at once (a gate opening, answers arriving together) runs each task's synchronous start
 * back to back, and a start that opens a connection is milliseconds of CPU (resuming a TLS
 * session parses it, the server's certificates included; the ClientHello is built): the loop is
 * held for hundreds of milliseconds, and every timer, lease renewal and drift repair with it.
 * Answers that arrive together do the same with their callers' next steps.
 *
 * {@link LoopPacer.turn} (a start) and {@link LoopPacer.resume} (the next step of work already
 * under way, served first) resolve in the check phase of a turn (`setImmediate`), each caller in
 * a callback of its own, so what it runs until its first wait for I/O is done before the next
 * one is let through. Once the callers let through in a turn took the budget, the rest wait for
 * the next turn, after the timers and I/O that came meanwhile. At least one per turn. Callers
 * beyond a turn wait in queues here, not in the loop's: a turn queues callbacks for twice as many
 * as the last one let through (at least {@link MIN_SLOTS}), so a backlog of thousands costs a
 * turn what it lets through, not a callback per caller waiting.
 */
export class LoopPacer {
  private readonly turnBudgetMs: number;
  private readonly now: () => number;
  /** Callers waiting, oldest first, with when they asked: next steps, then starts. */
  private readonly resuming: Waiter[] = [];
  private readonly starting: Waiter[] = [];
  /** Callbacks queued for a check phase (this one's still to run, or the next one's). */
  private slots = 0;
  /** When the current turn's check phase began letting callers through. */
  private turnBegan = Number.NEGATIVE_INFINITY;
  /** A marker for the next check phase is queued (it runs before the callbacks queued after it). */
  private markerQueued = false;
  /** No caller went through in this turn yet: the next one does, whatever the budget. */
  private turnFresh = false;
  /** Callers let through in this turn, and in the last turn that ended with callers waiting. */
  private ran = 0;
  private lastRan = 0;

  constructor(o: LoopPacerOptions = {}) {
    this.turnBudgetMs = o.turnBudgetMs ?? 4;
    this.now = o.now ?? (() => performance.now());
  }

  /** Resolves in a turn that has budget left, after the next steps waiting ({@link resume}). */
  turn(): Promise<void> {
    return this.wait(this.starting);
  }

  /** As {@link turn}, for the next step of work under way: before any start. */
  resume(): Promise<void> {
    return this.wait(this.resuming);
  }

  /**
   * How long the oldest next step has been waiting (ms; 0 when none waits): work under way that
   * is held back here is late as surely as work the loop runs late. Starts waiting are not
   * counted: they wait for the work under way.
   */
  waitingMs(): number {
    const oldest = this.resuming[0];
    return oldest === undefined ? 0 : this.now() - oldest.since;
  }

  private get waiting(): number {
    return this.resuming.length + this.starting.length;
  }

  private wait(queue: Waiter[]): Promise<void> {
    return new Promise((resolve) => {
      queue.push({ go: resolve, since: this.now() });
      this.fill();
    });
  }

  /** A marker for the next turn, and callbacks for as many waiting callers as it may let through. */
  private fill(): void {
    if (!this.markerQueued) {
      this.markerQueued = true;
      setImmediate(() => {
        this.markerQueued = false;
        this.turnBegan = this.now();
        this.turnFresh = true;
        this.ran = 0;
      });
    }
    const want = Math.min(this.waiting, Math.max(MIN_SLOTS, 2 * this.lastRan));
    while (this.slots < want) {
      this.slots++;
      setImmediate(() => {
        this.slot();
      });
    }
  }

  private slot(): void {
    this.slots--;
    if (this.waiting === 0) return;
    if (!this.turnFresh && this.now() - this.turnBegan >= this.turnBudgetMs) {
      this.lastRan = this.ran;
      this.fill();
      return;
    }
    this.turnFresh = false;
    this.ran++;
    (this.resuming.shift() ?? this.starting.shift())?.go();
    // Every callback of this turn let a caller through and some still wait: more for the next.
    if (this.slots === 0 && this.waiting > 0) {
      this.lastRan = this.ran;
      this.fill();
    }
  }
}

interface Waiter {
  readonly go: () => void;
  readonly since: number;
}
