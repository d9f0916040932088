import type { Counter, Gauge, Registry } from 'prom-client';
import { counterOn, gaugeOn } from '../../telemetry/prom-metrics.js';

/**
 * The workload follower's metrics. No revision or Pod labels (revisions come and go, Pods by the
 * thousand): the report in the status ConfigMap has the per-revision detail.
 */
export interface WorkloadMetrics {
  /** Pods the follower follows now (0 on a replica that does not lead). */
  readonly followedPods: Gauge;
  /** Pods that started failing for a reason the change can cause, by kind. */
  readonly failures: Counter<'kind'>;
  /** Writes of the report, by result (`ok`, `error`). */
  readonly writes: Counter<'result'>;
}

/** The follower's metrics on `registry` (shared if registered before). */
export function createWorkloadMetrics(registry: Registry): WorkloadMetrics {
  return {
    followedPods: gaugeOn(registry, {
      name: 'rtb_webhook_workload_followed_pods',
      help: 'Pods changed by the webhook that this replica follows for the workload-health report (0 unless it leads).',
      labelNames: [],
    }),
    failures: counterOn(registry, {
      name: 'rtb_webhook_workload_failures_total',
      help: 'Pods that started failing for a reason the change can cause (image-pull, pull-secret-missing, mount).',
      labelNames: ['kind'],
    }),
    writes: counterOn(registry, {
      name: 'rtb_webhook_workload_report_writes_total',
      help: 'Writes of the workload-health report into the status ConfigMap, by result.',
      labelNames: ['result'],
    }),
  };
}
