// Waiting for a condition on what a watch delivers, without polling the API server: the watch's
// handler says something changed, and every waiter checks its condition again.

/** Waiters woken on every change (and at least once a second). */
export class ChangeWaiters {
  private readonly waiters = new Set<() => void>();

  /** Something changed: every waiter checks again. */
  notify(): void {
    for (const wake of [...this.waiters]) wake();
  }

  /**
   * Resolves with the first answer of `check` other than undefined, checked now and after every
   * change; rejects after `timeoutMs` with `failure()` as the message.
   */
  async until<T>(check: () => T | undefined, timeoutMs: number, failure: () => string): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const answer = check();
      if (answer !== undefined) return answer;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(failure());
      await new Promise<void>((resolve) => {
        const wake = (): void => {
          this.waiters.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, 1_000));
        this.waiters.add(wake);
      });
    }
  }
}
