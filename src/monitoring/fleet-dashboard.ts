/**
 * The fleet dashboard (KCP): the controller's view of every runtime. Series of several replicas
 * are combined with `max` where each replica reports the same fleet, `sum` where each counts its
 * own work.
 */
import {
  DRIFT_CLIENT_CERT_EXPIRY,
  DRIFT_CLIENT_CERTS_EXPIRING,
  DRIFT_LISTENER_CERT_EXPIRY,
  KCP_CA_EXPIRY,
  NOT_READY_SINCE,
  PULL_SECRET_LAST_CHANGE,
  TRUST_BUNDLE_EXPIRY,
} from '../controller/expiry/expiry-metric-specs.js';
import type { DashboardSpec } from './dashboard-model.js';
import type { QueryBuilder } from './promql-query.js';

/** The fleet dashboard's uid (its URL is `/d/<uid>`). */
export const FLEET_DASHBOARD_UID = 'rtb-fleet';

/** The fleet dashboard. */
export function fleetDashboard(q: QueryBuilder): DashboardSpec {
  const quantiles = (name: string, range: string): { query: ReturnType<QueryBuilder>; legend: string }[] =>
    [0.5, 0.99, 1].map((p) => ({
      query: q(
        (m) =>
          `histogram_quantile(${p}, sum by (le) (rate(${m.sel('controller', `${name}_bucket`)}[${range}])))`,
      ),
      legend: p === 1 ? 'max' : `p${p * 100}`,
    }));
  return {
    uid: FLEET_DASHBOARD_UID,
    title: 'rt-bootstrapper / Fleet (KCP)',
    description:
      'The KCP controller and every runtime it serves: states, versions, rollout, drift, expiries.',
    tags: ['rt-bootstrapper', 'kcp'],
    rows: [
      {
        title: 'Runtimes',
        panels: [
          {
            type: 'graph',
            title: 'Runtimes by state',
            description: 'RuntimeBootstrappers by status.state.',
            unit: 'short',
            width: 8,
            queries: [
              {
                query: q((m) => `max by (state) (${m.sel('controller', 'rtb_runtimes')})`),
                legend: '{{state}}',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Runtimes by applied set version',
            description: 'Which source-set version each runtime has applied (few at once).',
            unit: 'short',
            width: 8,
            queries: [
              {
                query: q(
                  (m) => `max by (version) (${m.sel('controller', 'rtb_runtimes_by_applied_version')})`,
                ),
                legend: '{{version}}',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Runtimes by webhook release',
            description: 'The webhook release installed on each runtime.',
            unit: 'short',
            width: 8,
            queries: [
              {
                query: q(
                  (m) => `max by (version) (${m.sel('controller', 'rtb_runtimes_by_webhook_version')})`,
                ),
                legend: '{{version}}',
              },
            ],
          },
          {
            type: 'stat',
            title: 'Longest not Ready',
            description:
              'How long the runtime longest not Ready (Paused aside) has been so; empty while all are Ready.',
            unit: 's',
            width: 8,
            queries: [
              {
                query: q((m) => `time() - min(${m.sel('controller', NOT_READY_SINCE.name)})`),
                legend: 'not Ready for',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Reconcile errors by reason',
            description:
              'Failed runtime reconciles by the condition that failed (the runtime is named in its CR status).',
            unit: 'ops',
            width: 16,
            queries: [
              {
                query: q(
                  (m) =>
                    `sum by (reason) (rate(${m.sel('controller', 'rtb_runtime_sync_errors_total')}[5m]))`,
                ),
                legend: '{{reason}}',
              },
            ],
          },
        ],
      },
      {
        title: 'Rollout',
        panels: [
          {
            type: 'graph',
            title: 'Rollout phase and wave',
            description: 'The phase the rollout is in (1) and the index of the wave in progress.',
            unit: 'short',
            width: 8,
            queries: [
              {
                query: q((m) => `max by (phase) (${m.sel('controller', 'rtb_rollout_phase')}) > 0`),
                legend: '{{phase}}',
              },
              { query: q((m) => `max(${m.sel('controller', 'rtb_rollout_wave')})`), legend: 'wave' },
            ],
          },
          {
            type: 'graph',
            title: 'Halts and rollbacks',
            description: 'Rollouts halted and runtimes sent back to the last healthy revision, per hour.',
            unit: 'short',
            width: 8,
            queries: [
              {
                query: q((m) => `sum(increase(${m.sel('controller', 'rtb_rollout_halts_total')}[1h]))`),
                legend: 'halts',
              },
              {
                query: q((m) => `sum(increase(${m.sel('controller', 'rtb_rollout_rollbacks_total')}[1h]))`),
                legend: 'rollbacks',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Source change to runtime',
            description:
              'Time from a source change on the KCP until a runtime had the new set applied (max: the last runtime).',
            unit: 's',
            width: 8,
            queries: quantiles('rtb_propagation_seconds', '15m'),
          },
          {
            type: 'graph',
            title: 'Annotate mode: signals',
            description: 'Runtimes signalled to KIM per second, and those of the current pass still to go.',
            unit: 'short',
            width: 12,
            queries: [
              {
                query: q(
                  (m) => `sum(rate(${m.sel('controller', 'rtb_controller_runtimes_signalled_total')}[5m]))`,
                ),
                legend: 'signalled/s',
              },
              {
                query: q((m) => `max(${m.sel('controller', 'rtb_controller_signal_pending_runtimes')})`),
                legend: 'pending',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Source problems',
            description: 'A source missing or invalid on the KCP (1): it is not propagated until fixed.',
            unit: 'short',
            width: 12,
            queries: [
              {
                query: q(
                  (m) =>
                    `max by (source, reason) (${m.sel('controller', 'rtb_controller_source_problem')}) > 0`,
                ),
                legend: '{{source}} {{reason}}',
              },
            ],
          },
        ],
      },
      {
        title: 'Drift and resync',
        panels: [
          {
            type: 'graph',
            title: 'Drift reports',
            description: 'Drift events accepted by kind, and verifications refused by reason.',
            unit: 'ops',
            width: 8,
            queries: [
              {
                query: q(
                  (m) =>
                    `sum by (kind) (rate(${m.sel('controller', 'rtb_drift_listener_events_accepted_total')}[5m]))`,
                ),
                legend: 'accepted {{kind}}',
              },
              {
                query: q(
                  (m) =>
                    `sum by (reason) (rate(${m.sel('controller', 'rtb_drift_listener_rejected_verifications_total')}[5m]))`,
                ),
                legend: 'refused {{reason}}',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Drift repair latency',
            description: 'From a drift report received by the KCP until its runtime had the set re-applied.',
            unit: 's',
            width: 8,
            queries: quantiles('rtb_drift_repair_seconds', '15m'),
          },
          {
            type: 'graph',
            title: 'Resync and attestation verdicts',
            description: 'Runtimes forced or skipped at periodic resyncs, and attestations by verdict.',
            unit: 'ops',
            width: 8,
            queries: [
              {
                query: q(
                  (m) =>
                    `sum by (action) (rate(${m.sel('controller', 'rtb_periodic_resync_runtimes_total')}[30m]))`,
                ),
                legend: 'resync {{action}}',
              },
              {
                query: q(
                  (m) =>
                    `sum by (verdict) (rate(${m.sel('controller', 'rtb_attestations_received_total')}[30m]))`,
                ),
                legend: 'attestation {{verdict}}',
              },
            ],
          },
        ],
      },
      {
        title: 'Controller',
        panels: [
          {
            type: 'graph',
            title: 'Work queues',
            description: 'Keys waiting per queue, and retries per second (a queue that does not drain).',
            unit: 'short',
            width: 8,
            queries: [
              {
                query: q((m) => `sum by (name) (${m.sel('controller', 'workqueue_depth')})`),
                legend: 'depth {{name}}',
              },
              {
                query: q(
                  (m) => `sum by (name) (rate(${m.sel('controller', 'workqueue_retries_total')}[5m]))`,
                ),
                legend: 'retries/s {{name}}',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Leader and reconcile errors',
            description: 'Whether a replica holds the Lease, and reconcile errors per second.',
            unit: 'short',
            width: 8,
            queries: [
              {
                query: q((m) => `max by (name) (${m.sel('controller', 'leader_election_master_status')})`),
                legend: 'leader {{name}}',
              },
              {
                query: q(
                  (m) =>
                    `sum by (controller) (rate(${m.sel('controller', 'controller_runtime_reconcile_errors_total')}[5m]))`,
                ),
                legend: 'errors/s {{controller}}',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Memory',
            description: 'Resident memory and used V8 heap of each replica (the container limit is 512 MiB).',
            unit: 'bytes',
            width: 8,
            queries: [
              {
                query: q((m) => m.sel('controller', 'process_resident_memory_bytes')),
                legend: 'RSS {{instance}}',
              },
              {
                query: q((m) => m.sel('controller', 'nodejs_heap_size_used_bytes')),
                legend: 'heap {{instance}}',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Event-loop delay',
            description: 'p99 of the event loop delay of each replica (high: reconciles are CPU-bound).',
            unit: 's',
            width: 24,
            queries: [
              {
                query: q((m) => m.sel('controller', 'nodejs_eventloop_lag_p99_seconds')),
                legend: '{{instance}}',
              },
            ],
          },
        ],
      },
      {
        title: 'Expiries',
        panels: [
          {
            type: 'graph',
            title: 'Time left: CA, listener, trust bundle',
            description:
              "Time until the KCP's CA, the drift listener's certificate and the landscape's trust bundle expire.",
            unit: 's',
            width: 8,
            queries: [
              {
                query: q((m) => `min(${m.sel('controller', KCP_CA_EXPIRY.name)}) - time()`),
                legend: 'KCP CA',
              },
              {
                query: q((m) => `min(${m.sel('controller', DRIFT_LISTENER_CERT_EXPIRY.name)}) - time()`),
                legend: 'drift listener',
              },
              {
                query: q((m) => `min(${m.sel('controller', TRUST_BUNDLE_EXPIRY.name)}) - time()`),
                legend: 'trust bundle',
              },
            ],
          },
          {
            type: 'graph',
            title: 'Drift client certificates',
            description:
              'Time until the earliest runtime drift client certificate expires, by state, and how many expire within 14 days.',
            unit: 's',
            width: 8,
            queries: [
              {
                query: q(
                  (m) => `min by (state) (${m.sel('controller', DRIFT_CLIENT_CERT_EXPIRY.name)}) - time()`,
                ),
                legend: 'earliest {{state}}',
              },
              {
                query: q((m) => `sum by (state) (${m.sel('controller', DRIFT_CLIENT_CERTS_EXPIRING.name)})`),
                legend: 'within 14 days {{state}}',
              },
            ],
          },
          {
            type: 'stat',
            title: 'Pull Secret age',
            description: "Time since the landscape's pull Secret on the KCP was last written.",
            unit: 's',
            width: 8,
            queries: [
              {
                query: q((m) => `time() - max(${m.sel('controller', PULL_SECRET_LAST_CHANGE.name)})`),
                legend: 'age',
              },
            ],
          },
        ],
      },
    ],
  };
}
