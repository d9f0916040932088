/**
 * The source set direct mode writes, and the fan-out a change of it starts: a burst of source
 * events becomes one fan-out with the final set, after a short window.
 */
import type { Logger } from 'pino';
import type { DirectSources } from './direct-mode-options.js';
import { buildSyncSet, type SyncSetResult } from './sync-set.js';

/** The set to write and when the sources last changed (epoch ms; propagation is measured from it). */
export interface CurrentSet {
  readonly result: SyncSetResult;
  readonly changedAt: number;
}

/** See the file comment. */
export class SourceFanout {
  private set: CurrentSet;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly o: {
      readonly sources: DirectSources;
      /** Source changes within this window become one fan-out. */
      readonly coalesceMs: number;
      readonly logger: Logger;
      /** The set changed: write it everywhere. */
      readonly fanOut: () => void;
    },
  ) {
    this.set = { result: buildSyncSet(o.sources.snapshot()), changedAt: Date.now() };
  }

  /** The set to write now. */
  current(): CurrentSet {
    return this.set;
  }

  /**
   * Listens for source changes, and builds the set again from the sources as they are now (they
   * may have moved since it was built), keeping its change time.
   */
  start(): void {
    this.set = { result: buildSyncSet(this.o.sources.snapshot()), changedAt: this.set.changedAt };
    this.unsubscribe ??= this.o.sources.onChange(() => {
      if (this.timer) return;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.set = { result: buildSyncSet(this.o.sources.snapshot()), changedAt: Date.now() };
        const r = this.set.result;
        this.o.logger.info(
          r.ok ? { version: r.set.version } : { problem: r.reason },
          r.ok ? 'source set changed; fanning out' : 'source set inconsistent; not propagated',
        );
        this.o.fanOut();
      }, this.o.coalesceMs);
    });
  }

  /** Stops listening; a pending fan-out is dropped. */
  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
