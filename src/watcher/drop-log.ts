import type { Logger } from 'pino';
import type { DropReason } from './forwarder-metrics.js';
import type { WatchEvent } from './watch-event.js';

const QUEUE_FULL_EVERY_MS = 10_000;

/**
 * Log lines for dropped drift events: one per event, except for a full queue, where a storm
 * drops thousands a second and one line per ten seconds (with the count since) tells the story.
 * Lines carry object coordinates only: Secret names are not secret, their data never gets here.
 */
export class DropLog {
  private queueFullAt = Number.NEGATIVE_INFINITY;
  private queueFullSuppressed = 0;

  constructor(private readonly logger: Logger) {}

  /** Logs one dropped event. */
  dropped(event: WatchEvent, reason: DropReason, fields: Record<string, unknown>): void {
    const { group, version, kind } = event.watchedGvk;
    const line = {
      kind: `${group === '' ? '' : group + '/'}${version}/${kind}`,
      namespace: event.watched.Namespace,
      name: event.watched.Name,
      reason,
      ...fields,
    };
    if (reason !== 'queue_full') {
      this.logger.warn(line, 'drift event dropped');
      return;
    }
    const now = performance.now();
    if (now - this.queueFullAt < QUEUE_FULL_EVERY_MS) {
      this.queueFullSuppressed++;
      return;
    }
    this.logger.warn({ ...line, alsoDropped: this.queueFullSuppressed }, 'drift event dropped');
    this.queueFullAt = now;
    this.queueFullSuppressed = 0;
  }
}
