/**
 * The alerts (DESIGN.md §12): each has a severity, a summary, a description, a runbook
 * (docs/runbooks/<alert>.md) and a dashboard. Thresholds that follow from the product (memory
 * limits, the webhook's name) are read from the code that sets them.
 */
import {
  DRIFT_CLIENT_CERT_EXPIRY,
  DRIFT_LISTENER_CERT_EXPIRY,
  KCP_CA_EXPIRY,
  NOT_READY_SINCE,
  TRUST_BUNDLE_EXPIRY,
} from '../controller/expiry/expiry-metric-specs.js';
import { CONTROLLER_MEMORY_LIMIT } from '../render/controller-manifests.js';
import { WEBHOOK_MEMORY_LIMIT } from '../render/webhook-deployment.js';
import { FLEET_DASHBOARD_UID } from './fleet-dashboard.js';
import type { MonitoringOptions } from './monitoring-options.js';
import type { PromQuery, QueryBuilder } from './promql-query.js';
import { OUR_WEBHOOK, WEBHOOK_DASHBOARD_UID } from './webhook-dashboard.js';

/** How urgent: `critical` pages, `warning` goes to a ticket. */
export type Severity = 'warning' | 'critical';

/** One alerting rule. */
export interface AlertRule {
  /** Also the runbook's file name. */
  readonly alert: string;
  readonly severity: Severity;
  readonly expr: PromQuery;
  /** How long the expression must hold (a Prometheus duration). */
  readonly for: string;
  readonly summary: string;
  readonly description: string;
  /** The uid of the dashboard to look at. */
  readonly dashboard: string;
}

/** The rules of one side: the KCP's (the controller) or a runtime's (the webhook). */
export interface AlertGroup {
  readonly name: string;
  readonly rules: readonly AlertRule[];
}

/** Admission latency budget: the API server's p99 of calls to our webhook (its timeout is 5 s). */
export const ADMISSION_P99_BUDGET_SECONDS = 0.5;
/** A runtime not Ready this long alerts. */
export const NOT_READY_ALERT_SECONDS = 15 * 60;
/** Memory alerts fire above this share of the container's limit. */
export const MEMORY_LIMIT_SHARE = 0.9;
/** Expiry alerts: a warning this long ahead, critical this long ahead. */
export const EXPIRY_WARNING_DAYS = 14;
export const EXPIRY_CRITICAL_DAYS = 3;

/** Bytes of a Kubernetes quantity in Mi or Gi (what the rendered limits use). */
export function quantityBytes(quantity: string): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!match) throw new Error(`unexpected memory quantity ${quantity}`);
  return Number(match[1]) * (match[2] === 'Gi' ? 2 ** 30 : 2 ** 20);
}

/** The warning (14 days) and critical (3 days) rule of one expiry: `left` is an expression of seconds left. */
function expiring(
  alert: string,
  left: PromQuery,
  what: string,
  dashboard: string,
  renewal: string,
): AlertRule[] {
  return (
    [
      ['warning', EXPIRY_WARNING_DAYS],
      ['critical', EXPIRY_CRITICAL_DAYS],
    ] as const
  ).map(([severity, days]) => ({
    alert,
    severity,
    expr: { expr: `${left.expr} < ${days} * 86400`, metrics: left.metrics },
    for: '10m',
    summary: `${what} expires in less than ${days} days`,
    description: `${what} expires in less than ${days} days. ${renewal}`,
    dashboard,
  }));
}

/** The controller's alerts, evaluated by the KCP's Prometheus. */
export function kcpAlerts(q: QueryBuilder, o: MonitoringOptions): AlertGroup {
  const fleet = FLEET_DASHBOARD_UID;
  const limit = quantityBytes(CONTROLLER_MEMORY_LIMIT);
  return {
    name: 'rt-bootstrapper.controller',
    rules: [
      {
        alert: 'RtbControllerDown',
        severity: 'critical',
        expr: q((m) => `absent(${m.sel('prometheus', 'up', `job="${o.controllerJob}"`)} == 1)`),
        for: '5m',
        summary: 'No rt-bootstrapper controller replica is up',
        description: `Prometheus scrapes no replica of the KCP controller (job ${o.controllerJob}): source changes reach no runtime, drift is not repaired.`,
        dashboard: fleet,
      },
      {
        alert: 'RtbControllerNoLeader',
        severity: 'critical',
        expr: q((m) => `max(${m.sel('controller', 'leader_election_master_status')}) == 0`),
        for: '5m',
        summary: 'No rt-bootstrapper controller replica holds the leader Lease',
        description:
          'Replicas run, but none leads: the mode (annotate or direct) runs nowhere, so nothing reaches the runtimes.',
        dashboard: fleet,
      },
      {
        alert: 'RtbRolloutHalted',
        severity: 'warning',
        expr: q((m) => `max(${m.sel('controller', 'rtb_rollout_phase', 'phase="Halted"')}) == 1`),
        for: '1m',
        summary: 'The rt-bootstrapper rollout is halted',
        description:
          "A wave's failures passed the RolloutPolicy's threshold: the rollout stopped (and rolled back unless --no-auto-rollback). New sets reach no further runtime until it is resumed.",
        dashboard: fleet,
      },
      {
        alert: 'RtbRuntimeNotReady',
        severity: 'warning',
        expr: q(
          (m) => `time() - min(${m.sel('controller', NOT_READY_SINCE.name)}) > ${NOT_READY_ALERT_SECONDS}`,
        ),
        for: '1m',
        summary: `A runtime has not been Ready for ${NOT_READY_ALERT_SECONDS / 60} minutes`,
        description: `At least one RuntimeBootstrapper has been Pending, Installing, Error or Deleting for more than ${NOT_READY_ALERT_SECONDS / 60} minutes: its runtime may miss the current sources or the webhook.`,
        dashboard: fleet,
      },
      {
        alert: 'RtbDriftRepairsFailing',
        severity: 'warning',
        expr: q(
          (m) =>
            `sum(rate(${m.sel('controller', 'workqueue_retries_total', 'name="drift-repair"')}[10m])) > 0`,
        ),
        for: '15m',
        summary: 'Drift repairs keep failing',
        description:
          'The KCP retries drift repairs of runtimes without pause: objects tampered with on a runtime stay wrong until a repair gets through.',
        dashboard: fleet,
      },
      {
        alert: 'RtbWorkQueueNotDraining',
        severity: 'warning',
        expr: q(
          (m) =>
            `max by (name) (${m.sel('controller', 'workqueue_depth')}) > 0 and on (name) sum by (name) (rate(${m.sel('controller', 'workqueue_work_duration_seconds_count')}[10m])) == 0`,
        ),
        for: '15m',
        summary: 'A controller work queue holds keys but processes none',
        description:
          'A work queue of the controller has had keys waiting and finished no work for 15 minutes: its workers are stuck.',
        dashboard: fleet,
      },
      {
        alert: 'RtbControllerMemoryNearLimit',
        severity: 'warning',
        expr: q(
          (m) =>
            `max(${m.sel('controller', 'process_resident_memory_bytes')}) > ${MEMORY_LIMIT_SHARE} * ${limit}`,
        ),
        for: '10m',
        summary: 'A controller replica is near its memory limit',
        description: `A controller replica's resident memory is above ${MEMORY_LIMIT_SHARE * 100} % of its ${CONTROLLER_MEMORY_LIMIT} limit: it will be OOM-killed if it grows further.`,
        dashboard: fleet,
      },
      ...expiring(
        'RtbKcpCaExpiring',
        q((m) => `min(${m.sel('controller', KCP_CA_EXPIRY.name)}) - time()`),
        "The KCP's rt-bootstrapper CA",
        fleet,
        'It signs the drift client certificates and every webhook serving certificate; direct mode rotates it 30 days ahead (--ca-renew-before), so the rotation has not happened.',
      ),
      ...expiring(
        'RtbDriftListenerCertificateExpiring',
        q((m) => `min(${m.sel('controller', DRIFT_LISTENER_CERT_EXPIRY.name)}) - time()`),
        "The drift listener's serving certificate",
        fleet,
        'It is renewed 30 days ahead; runtimes cannot report drift once it expires.',
      ),
      ...expiring(
        'RtbDriftClientCertificateExpiring',
        q((m) => `min(${m.sel('controller', DRIFT_CLIENT_CERT_EXPIRY.name)}) - time()`),
        "A runtime's drift client certificate",
        fleet,
        'Certificates are re-issued 30 days ahead (--cert-renew-before) at a reconcile, so the runtime has not been reconciled.',
      ),
      ...expiring(
        'RtbTrustBundleExpiring',
        q((m) => `min(${m.sel('controller', TRUST_BUNDLE_EXPIRY.name)}) - time()`),
        "A CA certificate in the landscape's ClusterTrustBundle",
        fleet,
        'Every Pod that mounts the bundle stops trusting that CA when it expires: a landscape outage unless the bundle gets its successor first.',
      ),
    ],
  };
}

/** The webhook's alerts, evaluated by each runtime's Prometheus. */
export function runtimeAlerts(q: QueryBuilder, o: MonitoringOptions): AlertGroup {
  const hook = WEBHOOK_DASHBOARD_UID;
  const limit = quantityBytes(WEBHOOK_MEMORY_LIMIT);
  return {
    name: 'rt-bootstrapper.webhook',
    rules: [
      {
        alert: 'RtbWebhookDown',
        severity: 'critical',
        expr: q((m) => `absent(${m.sel('prometheus', 'up', `job="${o.webhookJob}"`)} == 1)`),
        for: '5m',
        summary: 'No rt-bootstrapper webhook replica is up',
        description: `Prometheus scrapes no webhook replica (job ${o.webhookJob}): Pods are admitted without the landscape's registry, pull Secret, CA certificates and FIPS settings (the webhook fails open).`,
        dashboard: hook,
      },
      {
        alert: 'RtbWebhookFailingOpen',
        severity: 'critical',
        expr: q(
          (m) =>
            `sum(rate(${m.sel('apiserver', 'apiserver_admission_webhook_fail_open_count', OUR_WEBHOOK)}[5m])) > 0 or sum(rate(${m.sel('webhook', 'rtb_webhook_requests_total', 'result="error"')}[5m])) > 0`,
        ),
        for: '5m',
        summary: 'Pods are admitted without the webhook',
        description:
          'The API server lets Pods through because calls to the webhook fail (failurePolicy Ignore), or the webhook answers with errors and lets them through unchanged: those Pods miss the landscape settings.',
        dashboard: hook,
      },
      {
        alert: 'RtbWebhookLatencyHigh',
        severity: 'warning',
        expr: q(
          (m) =>
            `histogram_quantile(0.99, sum by (le) (rate(${m.sel('apiserver', 'apiserver_admission_webhook_admission_duration_seconds_bucket', OUR_WEBHOOK)}[5m]))) > ${ADMISSION_P99_BUDGET_SECONDS}`,
        ),
        for: '10m',
        summary: `Admission through the webhook takes over ${ADMISSION_P99_BUDGET_SECONDS} s at p99`,
        description: `The API server's p99 of calls to the webhook is above the ${ADMISSION_P99_BUDGET_SECONDS} s budget (the call times out at 5 s, then the Pod is admitted unmutated): every Pod creation waits for it.`,
        dashboard: hook,
      },
      {
        alert: 'RtbWebhookConfigRefused',
        severity: 'warning',
        expr: q((m) => `max(${m.sel('webhook', 'rtb_webhook_config_refused')}) == 1`),
        for: '15m',
        summary: 'The webhook refused its configuration; the last good one stays in force',
        description:
          'The latest text of ConfigMap rt-bootstrapper-config was refused for 15 minutes: the webhook keeps applying the last good configuration (or none), so the landscape change has not arrived.',
        dashboard: hook,
      },
      {
        alert: 'RtbEscapedPods',
        severity: 'warning',
        // The leader's count (the other replicas say 0), so max: one figure per runtime.
        expr: q((m) => `max(${m.sel('webhook', 'rtb_webhook_escaped_pods')}) > 0`),
        for: '30m',
        summary: 'Running Pods do not follow the landscape settings (admitted without the webhook)',
        description:
          'Pods admitted while the webhook did not answer (it fails open) or before the set changed still run without the registry rewrite, pull Secret, CA certificates or settings the set gives: they pull from public registries until restarted. With --repair-escaped the webhook restarts their owners; bare Pods only their creator can replace.',
        dashboard: hook,
      },
      {
        alert: 'RtbWebhookMemoryNearLimit',
        severity: 'warning',
        expr: q(
          (m) =>
            `max(${m.sel('webhook', 'process_resident_memory_bytes')}) > ${MEMORY_LIMIT_SHARE} * ${limit}`,
        ),
        for: '10m',
        summary: 'A webhook replica is near its memory limit',
        description: `A webhook replica's resident memory is above ${MEMORY_LIMIT_SHARE * 100} % of its ${WEBHOOK_MEMORY_LIMIT} limit: it will be OOM-killed if it grows further, and Pods fail open meanwhile.`,
        dashboard: hook,
      },
      ...expiring(
        'RtbWebhookCertificateExpiring',
        q(
          (m) =>
            `min(${m.sel('webhook', 'rtb_webhook_serving_certificate_expiration_timestamp_seconds')}) - time()`,
        ),
        "The webhook's serving certificate",
        hook,
        'It is renewed in the last third of its life (by the webhook, or by the KCP in direct mode); once expired the API server cannot call the webhook and Pods fail open.',
      ),
    ],
  };
}
