import type { Logger } from 'pino';

/** Stops one part; may be asynchronous. */
export type Stopper = () => Promise<void> | void;

/**
 * The parts started so far, to stop in reverse order: what a start that fails half-way, and a
 * stop, both need.
 */
export class StopStack {
  private readonly stoppers: Stopper[] = [];

  /** Records how to stop a part just started. */
  push(stop: Stopper): void {
    this.stoppers.push(stop);
  }

  /**
   * Stops every part recorded, last started first, once (a second call finds none). A failing
   * stop is logged and the others still run.
   */
  async stopAll(logger: Logger): Promise<void> {
    for (const stop of this.stoppers.splice(0).reverse()) {
      try {
        await stop();
      } catch (error) {
        logger.warn({ err: error }, 'stopping a part of the webhook failed');
      }
    }
  }
}
