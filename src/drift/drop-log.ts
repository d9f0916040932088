import type { Logger } from 'pino';
import { LogRateLimit } from '../telemetry/log-rate-limit.js';
import type { DropReason } from './forwarder-metrics.js';
import type { WatchEvent } from './watch-event.js';

const DROPPED = 'drift event dropped';
const QUEUE_FULL = 'drift event dropped: queue full';

/**
 * Log lines for dropped drift events: one per event, except for a full queue, where a storm
 * drops thousands a second and one line per ten seconds (then one saying how many more were
 * dropped) tells the story. Lines carry object coordinates only: Secret names are not secret,
 * their data never gets here.
 */
export class DropLog {
  private readonly queueFull: LogRateLimit;

  constructor(private readonly logger: Logger) {
    this.queueFull = new LogRateLimit(logger, { perInterval: 1, intervalMs: 10_000 });
  }

  /** Logs one dropped event. */
  dropped(event: WatchEvent, reason: DropReason, fields: Record<string, unknown>): void {
    if (reason === 'queue_full' && !this.queueFull.allow(QUEUE_FULL)) return;
    const { group, version, kind } = event.watchedGvk;
    const line = {
      kind: `${group === '' ? '' : group + '/'}${version}/${kind}`,
      namespace: event.watched.Namespace,
      name: event.watched.Name,
      reason,
      ...fields,
    };
    this.logger.warn(line, DROPPED);
  }

  /** Writes the pending count of suppressed lines now (on stop). */
  flush(): void {
    this.queueFull.flush();
  }
}
