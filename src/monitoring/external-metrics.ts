/**
 * Families the monitoring reads that are not ours: the kube-apiserver's view of admission
 * webhooks (k8s.io/apiserver pkg/admission/metrics, the same in 1.34 and 1.37) and Prometheus's
 * own `up`. The integration test checks them against a real API server and Prometheus.
 */
import type { MetricFamily } from './metric-catalog.js';

const family = (name: string, type: string, labelNames: readonly string[]): MetricFamily => ({
  name,
  type,
  help: '',
  labelNames,
});

/** The kube-apiserver's admission-webhook families. */
export const APISERVER_FAMILIES: ReadonlyMap<string, MetricFamily> = new Map(
  [
    family('apiserver_admission_webhook_admission_duration_seconds', 'histogram', [
      'name',
      'type',
      'operation',
      'rejected',
    ]),
    family('apiserver_admission_webhook_request_total', 'counter', [
      'name',
      'type',
      'operation',
      'code',
      'rejected',
    ]),
    family('apiserver_admission_webhook_rejection_count', 'counter', [
      'name',
      'type',
      'operation',
      'error_type',
      'rejection_code',
    ]),
    family('apiserver_admission_webhook_fail_open_count', 'counter', ['name', 'type']),
  ].map((f) => [f.name, f]),
);

/** Prometheus's synthetic series of every target. */
export const PROMETHEUS_FAMILIES: ReadonlyMap<string, MetricFamily> = new Map([
  ['up', family('up', 'gauge', ['job', 'instance'])],
]);
