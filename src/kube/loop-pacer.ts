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
 *
 * {@link LoopPacer.turn} resolves in the check phase of a turn (`setImmediate`), each caller in a
 * callback of its own, so what it runs until its first wait for I/O is done before the next one
 * is let through. Once the starts let through in a turn took the budget, the rest wait for the
 * next turn, after the timers and I/O that came meanwhile. At least one start per turn.
 */
export class LoopPacer {
  private readonly turnBudgetMs: number;
  private readonly now: () => number;
  /** When the current turn's check phase began letting starts through. */
  private turnBegan = Number.NEGATIVE_INFINITY;
  /** A marker for the next check phase is queued (it runs before the starts queued after it). */
  private markerQueued = false;
  /** No start went through in this turn yet: the next one does, whatever the budget. */
  private turnFresh = false;

  constructor(o: LoopPacerOptions = {}) {
    this.turnBudgetMs = o.turnBudgetMs ?? 4;
    this.now = o.now ?? (() => performance.now());
  }

  /** Resolves in a turn that has budget left. */
  turn(): Promise<void> {
    return new Promise((resolve) => {
      this.queue(resolve);
    });
  }

  private queue(start: () => void): void {
    if (!this.markerQueued) {
      this.markerQueued = true;
      setImmediate(() => {
        this.markerQueued = false;
        this.turnBegan = this.now();
        this.turnFresh = true;
      });
    }
    setImmediate(() => {
      if (!this.turnFresh && this.now() - this.turnBegan >= this.turnBudgetMs) {
        this.queue(start);
        return;
      }
      this.turnFresh = false;
      start();
    });
  }
}
