/**
 * promtool unit tests of every alert: at least one scenario that fires it and one that keeps it
 * silent. Series names go through the same checked references as the rules (a renamed metric
 * fails here too), and the expected annotations are the rendered ones.
 */
import { CONTROLLER_MEMORY_LIMIT } from '../../src/render/controller-manifests.js';
import { WEBHOOK_MEMORY_LIMIT } from '../../src/render/webhook-deployment.js';
import {
  DRIFT_CLIENT_CERT_EXPIRY,
  DRIFT_LISTENER_CERT_EXPIRY,
  KCP_CA_EXPIRY,
  NOT_READY_SINCE,
  TRUST_BUNDLE_EXPIRY,
} from '../../src/controller/expiry/expiry-metric-specs.js';
import { quantityBytes, type Severity } from '../../src/monitoring/alert-rules.js';
import { metricCatalog } from '../../src/monitoring/metric-catalog.js';
import type { MonitoringOptions } from '../../src/monitoring/monitoring-options.js';
import { promQuery, type FamilySource } from '../../src/monitoring/promql-query.js';
import { OUR_WEBHOOK } from '../../src/monitoring/webhook-dashboard.js';

/** One input series in promtool's notation. */
export interface InputSeries {
  readonly series: string;
  readonly values: string;
}

/** One scenario: the series, when it is evaluated, and the alerts (by severity) expected then. */
export interface Scenario {
  readonly what: string;
  readonly series: readonly InputSeries[];
  /** Minutes after the start. */
  readonly evalMinutes: number;
  readonly expect: readonly { readonly severity: Severity; readonly labels?: Record<string, string> }[];
}

/** The scenarios of one alert. */
export interface AlertCase {
  readonly alert: string;
  readonly scenarios: readonly Scenario[];
}

const DAY = 86_400;

/** The cases, for rules rendered with `o`. */
export function alertCases(o: MonitoringOptions): readonly AlertCase[] {
  const selectors = { controller: `job="${o.controllerJob}"`, webhook: `job="${o.webhookJob}"` };
  /** A series selector, checked as the rules' are. */
  const s = (source: FamilySource, name: string, labels = ''): string =>
    promQuery(metricCatalog(), selectors, (m) => m.sel(source, name, labels)).expr;
  const c = (name: string, labels = ''): string => s('controller', name, labels);
  const w = (name: string, labels = ''): string => s('webhook', name, labels);
  const constant = (value: number, minutes = 40): string => `${value}x${minutes}`;
  /** `series` holding `value` all along. */
  const steady = (series: string, value: number): InputSeries => ({ series, values: constant(value) });
  /**
   * One steady series of `name` (`of` the controller `c` or the webhook `w`) per entry of
   * `byValue`: its `label` set to the key (after the fixed `labels`), holding the entry's number;
   * in the entries' order.
   */
  const steadyPer = (
    of: typeof c,
    name: string,
    label: string,
    byValue: Readonly<Record<string, number>>,
    labels = '',
  ): InputSeries[] =>
    Object.entries(byValue).map(([key, value]) => steady(of(name, `${labels}${label}="${key}"`), value));
  /** The controller replicas' leader status, instance by instance. */
  const leaderStatus = (byInstance: Readonly<Record<string, number>>): InputSeries[] =>
    steadyPer(
      c,
      'leader_election_master_status',
      'instance',
      byInstance,
      'name="rt-bootstrapper-controller",',
    );
  /** Prometheus's `up` of one target of `job`. */
  const up = (job: string, instance: string, value: number): InputSeries =>
    steady(s('prometheus', 'up', `job="${job}",instance="${instance}"`), value);
  /** The case of `alert`: its scenarios, each evaluated `evalMinutes` after the start. */
  const evaluatedAt = (
    alert: string,
    evalMinutes: number,
    scenarios: readonly Omit<Scenario, 'evalMinutes'>[],
  ): AlertCase => ({ alert, scenarios: scenarios.map((scenario) => ({ ...scenario, evalMinutes })) });
  const firing = (severity: Severity, labels?: Record<string, string>) => [
    { severity, ...(labels ? { labels } : {}) },
  ];

  /** Expiry: 10 days left warns, 2 days left is critical (and still warns), 20 days is silent. */
  const expiry = (alert: string, series: (value: string) => InputSeries): AlertCase => {
    const at = 20;
    const left = (days: number): string => constant(at * 60 + days * DAY);
    return evaluatedAt(alert, at, [
      { what: '10 days left', series: [series(left(10))], expect: firing('warning') },
      {
        what: '2 days left',
        series: [series(left(2))],
        expect: [{ severity: 'warning' }, { severity: 'critical' }],
      },
      { what: '20 days left', series: [series(left(20))], expect: [] },
    ]);
  };
  const memory = (alert: string, name: string, limit: number): AlertCase =>
    evaluatedAt(alert, 20, [
      {
        what: 'at 95 % of the limit',
        series: [steady(name, Math.round(0.95 * limit))],
        expect: firing('warning'),
      },
      { what: 'at half the limit', series: [steady(name, Math.round(0.5 * limit))], expect: [] },
    ]);
  const apiserverBuckets = (slow: boolean): InputSeries[] =>
    ['0.25', '0.5', '1', '+Inf'].map((le) => ({
      series: s(
        'apiserver',
        'apiserver_admission_webhook_admission_duration_seconds_bucket',
        `${OUR_WEBHOOK},type="admit",operation="CREATE",rejected="false",le="${le}"`,
      ),
      values: slow && (le === '0.25' || le === '0.5') ? constant(0) : '0+10x40',
    }));

  return [
    evaluatedAt('RtbControllerDown', 20, [
      {
        what: 'no replica up',
        series: [up(o.controllerJob, 'a', 0)],
        expect: firing('critical'),
      },
      {
        what: 'no target at all',
        series: [up('other', 'a', 1)],
        expect: firing('critical'),
      },
      {
        what: 'one replica up',
        series: [up(o.controllerJob, 'a', 1), up(o.controllerJob, 'b', 0)],
        expect: [],
      },
    ]),
    evaluatedAt('RtbControllerNoLeader', 20, [
      {
        what: 'two replicas, neither leads',
        series: leaderStatus({ a: 0, b: 0 }),
        expect: firing('critical'),
      },
      {
        what: 'one leads',
        series: leaderStatus({ a: 1, b: 0 }),
        expect: [],
      },
    ]),
    evaluatedAt('RtbRolloutHalted', 10, [
      {
        what: 'halted',
        series: steadyPer(c, 'rtb_rollout_phase', 'phase', { Halted: 1, Progressing: 0 }),
        expect: firing('warning'),
      },
      {
        what: 'progressing',
        series: steadyPer(c, 'rtb_rollout_phase', 'phase', { Halted: 0, Progressing: 1 }),
        expect: [],
      },
    ]),
    evaluatedAt('RtbRuntimeNotReady', 20, [
      {
        what: 'not Ready since the start, evaluated 20 minutes later',
        series: [steady(c(NOT_READY_SINCE.name), 0)],
        expect: firing('warning'),
      },
      {
        what: 'not Ready for 10 minutes',
        series: [steady(c(NOT_READY_SINCE.name), 600)],
        expect: [],
      },
    ]),
    evaluatedAt('RtbDriftRepairsFailing', 30, [
      {
        what: 'retried every minute',
        series: [{ series: c('workqueue_retries_total', 'name="drift-repair"'), values: '0+1x40' }],
        expect: firing('warning'),
      },
      {
        what: 'retries long ago only; another queue retrying',
        series: [
          steady(c('workqueue_retries_total', 'name="drift-repair"'), 5),
          { series: c('workqueue_retries_total', 'name="runtimebootstrapper"'), values: '0+1x40' },
        ],
        expect: [],
      },
    ]),
    evaluatedAt('RtbWorkQueueNotDraining', 30, [
      {
        what: 'keys waiting, no work done',
        series: [
          steady(c('workqueue_depth', 'name="runtimebootstrapper"'), 3),
          steady(c('workqueue_work_duration_seconds_count', 'name="runtimebootstrapper"'), 10),
        ],
        expect: firing('warning', { name: 'runtimebootstrapper' }),
      },
      {
        what: 'keys waiting, work going on',
        series: [
          steady(c('workqueue_depth', 'name="runtimebootstrapper"'), 3),
          {
            series: c('workqueue_work_duration_seconds_count', 'name="runtimebootstrapper"'),
            values: '10+5x40',
          },
        ],
        expect: [],
      },
    ]),
    memory(
      'RtbControllerMemoryNearLimit',
      c('process_resident_memory_bytes', 'instance="a"'),
      quantityBytes(CONTROLLER_MEMORY_LIMIT),
    ),
    expiry('RtbKcpCaExpiring', (values) => ({ series: c(KCP_CA_EXPIRY.name), values })),
    expiry('RtbDriftListenerCertificateExpiring', (values) => ({
      series: c(DRIFT_LISTENER_CERT_EXPIRY.name),
      values,
    })),
    expiry('RtbDriftClientCertificateExpiring', (values) => ({
      series: c(DRIFT_CLIENT_CERT_EXPIRY.name, 'state="Ready"'),
      values,
    })),
    expiry('RtbTrustBundleExpiring', (values) => ({ series: c(TRUST_BUNDLE_EXPIRY.name), values })),
    evaluatedAt('RtbWebhookDown', 20, [
      {
        what: 'no replica up',
        series: [up(o.webhookJob, 'a', 0)],
        expect: firing('critical'),
      },
      {
        what: 'one replica up',
        series: [up(o.webhookJob, 'a', 0), up(o.webhookJob, 'b', 1)],
        expect: [],
      },
    ]),
    evaluatedAt('RtbWebhookFailingOpen', 20, [
      {
        what: 'the API server fails open',
        series: [
          {
            series: s(
              'apiserver',
              'apiserver_admission_webhook_fail_open_count',
              `${OUR_WEBHOOK},type="admit"`,
            ),
            values: '0+1x40',
          },
          steady(w('rtb_webhook_requests_total', 'result="error"'), 0),
        ],
        expect: firing('critical'),
      },
      {
        what: 'the webhook answers with errors',
        series: [{ series: w('rtb_webhook_requests_total', 'result="error"'), values: '0+2x40' }],
        expect: firing('critical'),
      },
      {
        what: 'another webhook fails open; ours answers',
        series: [
          {
            series: s(
              'apiserver',
              'apiserver_admission_webhook_fail_open_count',
              'name="other.example.com",type="admit"',
            ),
            values: '0+1x40',
          },
          steady(w('rtb_webhook_requests_total', 'result="error"'), 3),
          { series: w('rtb_webhook_requests_total', 'result="mutated"'), values: '0+50x40' },
        ],
        expect: [],
      },
    ]),
    evaluatedAt('RtbWebhookLatencyHigh', 30, [
      {
        what: 'calls take 0.5–1 s',
        series: apiserverBuckets(true),
        expect: firing('warning'),
      },
      { what: 'calls take under 0.25 s', series: apiserverBuckets(false), expect: [] },
    ]),
    evaluatedAt('RtbWebhookConfigRefused', 20, [
      {
        what: 'refused for 20 minutes',
        series: [steady(w('rtb_webhook_config_refused', 'instance="a"'), 1)],
        expect: firing('warning'),
      },
      {
        what: 'refused for 5 minutes, then a good text',
        series: [{ series: w('rtb_webhook_config_refused', 'instance="a"'), values: '1x5 0x35' }],
        expect: [],
      },
    ]),
    evaluatedAt('RtbEscapedPods', 40, [
      {
        what: 'the leader counts escaped Pods for 40 minutes, a standby says 0',
        series: steadyPer(w, 'rtb_webhook_escaped_pods', 'instance', { a: 3, b: 0 }),
        expect: firing('warning'),
      },
      {
        what: 'escaped Pods for 20 minutes, then repaired',
        series: [{ series: w('rtb_webhook_escaped_pods', 'instance="a"'), values: '2x20 0x25' }],
        expect: [],
      },
    ]),
    memory(
      'RtbWebhookMemoryNearLimit',
      w('process_resident_memory_bytes', 'instance="a"'),
      quantityBytes(WEBHOOK_MEMORY_LIMIT),
    ),
    expiry('RtbWebhookCertificateExpiring', (values) => ({
      series: w('rtb_webhook_serving_certificate_expiration_timestamp_seconds', 'instance="a"'),
      values,
    })),
  ];
}
