import type { Histogram, Registry } from 'prom-client';
import { histogramOn } from '../../telemetry/prom-metrics.js';

/**
 * The drift repair latency (`rtb_drift_repair_seconds`): from the moment a drift report reached
 * the KCP until its runtime had the set re-applied, whichever replica received the report and
 * whichever repaired it (a relayed report carries the time it was received). Several reports of
 * one runtime before its repair count once, from the first.
 */
export class RepairLatency {
  private readonly histogram: Histogram<never>;
  /** Per RuntimeBootstrapper key: when (epoch ms) the first report not yet repaired arrived. */
  private readonly pending = new Map<string, number>();

  constructor(
    registry: Registry,
    private readonly now: () => number = Date.now,
  ) {
    this.histogram = histogramOn(registry, {
      name: 'rtb_drift_repair_seconds',
      help: 'Time from a drift event received by the KCP (by any replica) until its runtime had the set re-applied.',
      labelNames: [],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    });
  }

  /** A report for `key`, received at `receivedAt` (epoch ms), is to be repaired here. */
  reported(key: string, receivedAt: number): void {
    if (!this.pending.has(key)) this.pending.set(key, receivedAt);
  }

  /** `key` was reconciled or repaired; a success closes its measurement. */
  repaired(key: string, ok: boolean): void {
    const since = this.pending.get(key);
    if (since === undefined || !ok) return;
    this.pending.delete(key);
    // Another replica's clock may run ahead of ours: never a negative time.
    this.histogram.observe(Math.max(0, this.now() - since) / 1000);
  }
}
