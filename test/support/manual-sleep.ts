/** An injected sleep whose waits end only when the test says so (or on their abort signal). */

/**
 * Records each wait asked of it (`asked`, in ms) and holds it until `wake` (or its signal aborts);
 * pass `sleep` where the code under test takes its wait between passes.
 */
export class ManualSleep {
  readonly asked: number[] = [];
  private pending: (() => void) | undefined;

  readonly sleep = (ms: number, signal: AbortSignal): Promise<void> => {
    this.asked.push(ms);
    return new Promise((resolve) => {
      const done = (): void => {
        if (this.pending === done) this.pending = undefined;
        resolve();
      };
      if (signal.aborted) {
        done();
        return;
      }
      this.pending = done;
      signal.addEventListener('abort', done, { once: true });
    });
  };

  /** Ends the wait in progress; false when none is (no wait yet, or it ended on its signal). */
  wake(): boolean {
    const pending = this.pending;
    this.pending = undefined;
    pending?.();
    return pending !== undefined;
  }
}
