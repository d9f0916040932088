/**
 * The runtime webhook dashboard: the webhook's own view of admissions beside the API server's
 * (`apiserver_admission_webhook_*` for our webhook entry), its config, the pull Secret copies,
 * trust-bundle restarts and memory.
 */
import { MUTATING_WEBHOOK_NAME } from '../api/runtime-names.js';
import type { DashboardSpec } from './dashboard-model.js';
import type { QueryBuilder } from './promql-query.js';

/** The webhook dashboard's uid. */
export const WEBHOOK_DASHBOARD_UID = 'rtb-webhook';

/** The API server's series of our mutating webhook entry. */
export const OUR_WEBHOOK = `name="${MUTATING_WEBHOOK_NAME}"`;

/** The runtime webhook dashboard. */
export function webhookDashboard(q: QueryBuilder): DashboardSpec {
  const ours = (name: string): string => `${name}_bucket`;
  return {
    uid: WEBHOOK_DASHBOARD_UID,
    title: 'rt-bootstrapper / Runtime webhook',
    description:
      "The runtime's mutating webhook: admissions, the API server's view of it, config, copies, restarts.",
    tags: ['rt-bootstrapper', 'runtime'],
    rows: [
      {
        title: 'Admissions',
        panels: [
          {
            type: 'graph',
            title: 'Admissions by result',
            description: 'Admission requests answered per second: mutated, unchanged, bad_request, error.',
            unit: 'reqps',
            width: 8,
            queries: [
              {
                query: q(
                  (m) => `sum by (result) (rate(${m.sel('webhook', 'rtb_webhook_requests_total')}[5m]))`,
                ),
                legend: '{{result}}',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Answer latency (webhook)',
            description: 'Time the webhook took to answer, p50 and p99.',
            unit: 's',
            width: 8,
            queries: [0.5, 0.99].map((p) => ({
              query: q(
                (m) =>
                  `histogram_quantile(${p}, sum by (le) (rate(${m.sel('webhook', ours('rtb_webhook_request_duration_seconds'))}[5m])))`,
              ),
              legend: `p${p * 100}`,
            })),
          },
          {
            type: 'graph',
            title: 'Requests turned away',
            description: "Requests the server's memory bounds refused, by reason.",
            unit: 'reqps',
            width: 8,
            queries: [
              {
                query: q(
                  (m) =>
                    `sum by (reason) (rate(${m.sel('webhook', 'rtb_webhook_requests_refused_total')}[5m]))`,
                ),
                legend: '{{reason}}',
              },
            ],
          },
        ],
      },
      {
        title: "The API server's view",
        panels: [
          {
            type: 'graph',
            title: 'Calls by code',
            description: 'Calls the API server made to our webhook, by HTTP code (0: no answer).',
            unit: 'reqps',
            width: 8,
            queries: [
              {
                query: q(
                  (m) =>
                    `sum by (code) (rate(${m.sel('apiserver', 'apiserver_admission_webhook_request_total', OUR_WEBHOOK)}[5m]))`,
                ),
                legend: '{{code}}',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Admission latency (API server)',
            description: 'Time the API server spent calling our webhook, p50 and p99 (the budget is 0.5 s).',
            unit: 's',
            width: 8,
            queries: [0.5, 0.99].map((p) => ({
              query: q(
                (m) =>
                  `histogram_quantile(${p}, sum by (le) (rate(${m.sel('apiserver', 'apiserver_admission_webhook_admission_duration_seconds_bucket', OUR_WEBHOOK)}[5m])))`,
              ),
              legend: `p${p * 100}`,
            })),
          },
          {
            type: 'graph',
            title: 'Failed open and rejections',
            description:
              'Calls that failed and were let through (failurePolicy Ignore: Pods stored unmutated), and calls rejected, by error type.',
            unit: 'ops',
            width: 8,
            queries: [
              {
                query: q(
                  (m) =>
                    `sum(rate(${m.sel('apiserver', 'apiserver_admission_webhook_fail_open_count', OUR_WEBHOOK)}[5m]))`,
                ),
                legend: 'failed open',
              },
              {
                query: q(
                  (m) =>
                    `sum by (error_type) (rate(${m.sel('apiserver', 'apiserver_admission_webhook_rejection_count', OUR_WEBHOOK)}[5m]))`,
                ),
                legend: 'rejected {{error_type}}',
              },
            ],
          },
        ],
      },
      {
        title: 'Configuration, pull Secret, trust bundle',
        panels: [
          {
            type: 'graph',
            title: 'Configuration',
            description:
              'Texts taken into force or refused, and whether the latest one read was refused (the last good one stays in force).',
            unit: 'short',
            width: 8,
            queries: [
              {
                query: q(
                  (m) =>
                    `sum by (result) (increase(${m.sel('webhook', 'rtb_webhook_config_reloads_total')}[1h]))`,
                ),
                legend: '{{result}} per hour',
              },
              {
                query: q((m) => `max(${m.sel('webhook', 'rtb_webhook_config_refused')})`),
                legend: 'refused now',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Pull Secret copies',
            description:
              'Writes of the pull Secret into namespaces by result, and Pods that asked for it while its source was missing.',
            unit: 'ops',
            width: 8,
            queries: [
              {
                query: q(
                  (m) =>
                    `sum by (result) (rate(${m.sel('webhook', 'rtb_webhook_pull_secret_copies_total')}[5m]))`,
                ),
                legend: '{{result}}',
              },
              {
                query: q(
                  (m) => `sum(rate(${m.sel('webhook', 'rtb_webhook_pull_secret_source_missing_total')}[5m]))`,
                ),
                legend: 'source missing',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Trust-bundle restarts',
            description:
              'Pods on an old trust bundle, owners restarted and evictions per hour, and Pods that got no mount.',
            unit: 'short',
            width: 8,
            queries: [
              {
                query: q((m) => `sum(${m.sel('webhook', 'rtb_trust_restart_stale_pods')})`),
                legend: 'stale Pods',
              },
              {
                query: q(
                  (m) => `sum(increase(${m.sel('webhook', 'rtb_trust_restart_owners_restarted_total')}[1h]))`,
                ),
                legend: 'owners restarted',
              },
              {
                query: q(
                  (m) => `sum(increase(${m.sel('webhook', 'rtb_trust_restart_evictions_total')}[1h]))`,
                ),
                legend: 'evictions',
              },
              {
                query: q(
                  (m) =>
                    `sum by (reason) (increase(${m.sel('webhook', 'rtb_webhook_trust_bundle_skipped_total')}[1h]))`,
                ),
                legend: 'no mount: {{reason}}',
              },
            ],
          },
        ],
      },
      {
        title: 'Process',
        panels: [
          {
            type: 'graph',
            title: 'Memory',
            description: 'Resident memory of each replica (the container limit is 256 MiB).',
            unit: 'bytes',
            width: 12,
            queries: [
              { query: q((m) => m.sel('webhook', 'process_resident_memory_bytes')), legend: '{{instance}}' },
            ],
          },
          {
            type: 'graph',
            title: 'Serving certificate: time left',
            description: 'Time until the certificate each replica serves expires.',
            unit: 's',
            width: 12,
            queries: [
              {
                query: q(
                  (m) =>
                    `${m.sel('webhook', 'rtb_webhook_serving_certificate_expiration_timestamp_seconds')} - time()`,
                ),
                legend: '{{instance}}',
              },
            ],
          },
        ],
      },
    ],
  };
}
