/**
 * Reconcile metrics on prom-client with controller-runtime's names and labels
 * (`controller_runtime_*{controller}`), fed by the work queue's worker loop.
 */
import type { Registry } from 'prom-client';
import type { ReconcileMetrics, ReconcileMetricsProvider, ReconcileResultKind } from './metrics-hooks.js';
import { counterOn, gaugeOn, histogramOn } from '../telemetry/prom-metrics.js';

/** controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`. */
export const RECONCILE_TIME_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

const RESULTS: readonly ReconcileResultKind[] = ['success', 'error', 'requeue', 'requeue_after'];

/** Registers the `controller_runtime_*` families on a registry and binds them per controller. */
export class PrometheusReconcileMetrics implements ReconcileMetricsProvider {
  private readonly total;
  private readonly errors;
  private readonly time;
  private readonly workerCount;
  private readonly activeWorkers;

  constructor(registry: Registry) {
    this.total = counterOn(registry, {
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller',
      labelNames: ['controller', 'result'] as const,
    });
    this.errors = counterOn(registry, {
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller',
      labelNames: ['controller'] as const,
    });
    this.time = histogramOn(registry, {
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'] as const,
      buckets: RECONCILE_TIME_BUCKETS,
    });
    this.workerCount = gaugeOn(registry, {
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller',
      labelNames: ['controller'] as const,
    });
    this.activeWorkers = gaugeOn(registry, {
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller',
      labelNames: ['controller'] as const,
    });
  }

  forController(controller: string): ReconcileMetrics {
    // As controller-runtime: every result series exists from the start, at 0.
    for (const result of RESULTS) this.total.labels({ controller, result }).inc(0);
    const errors = this.errors.labels({ controller });
    errors.inc(0);
    const time = this.time.labels({ controller });
    const active = this.activeWorkers.labels({ controller });
    active.set(0);
    return {
      maxConcurrency: (n) => {
        this.workerCount.labels({ controller }).set(n);
      },
      activeWorkers: (delta) => {
        active.inc(delta);
      },
      observe: (result, seconds) => {
        this.total.labels({ controller, result }).inc();
        if (result === 'error') errors.inc();
        time.observe(seconds);
      },
    };
  }
}
