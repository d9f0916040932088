import type { Counter, Gauge, Registry } from 'prom-client';
import { counterOn, gaugeOn } from '../../telemetry/prom-metrics.js';

/**
 * The restarter's metrics. Namespaces are a label of the stale-Pod gauge only (the question it
 * answers is "where"); it is reset on every count, so it holds only namespaces with stale Pods.
 * Never Pod or owner names.
 */
export interface RestartMetrics {
  /** Pods carrying the mount that run an older bundle (opted-out ones not included), by namespace. */
  readonly stalePods: Gauge<'namespace'>;
  /** Stale Pods without an owner (never restarted, reported). */
  readonly barePods: Gauge;
  /** Stale Pods whose owner opted out. */
  readonly optedOutPods: Gauge;
  /** Workloads whose Pod template got the new hash, by kind. */
  readonly ownersRestarted: Counter<'kind'>;
  readonly evictions: Counter;
  /** Evictions a PodDisruptionBudget refused (429), retried later. */
  readonly evictionsBlocked: Counter;
  /** Restarts that did not complete within the deadline (the next one went on). */
  readonly pastDeadline: Counter<'kind'>;
  /** 1 while this replica is the active restarter. */
  readonly active: Gauge;
  /** API requests of the restarter's passes (reads, patches, evictions; not its Pod watch), by call. */
  readonly requests: Counter<'call'>;
}

/** The restarter's metrics on `registry` (shared if registered before). */
export function createRestartMetrics(registry: Registry): RestartMetrics {
  return {
    stalePods: gaugeOn(registry, {
      name: 'rtb_trust_restart_stale_pods',
      help: 'Pods with the trust-bundle mount that still run an older bundle and will be restarted, by namespace.',
      labelNames: ['namespace'],
    }),
    barePods: gaugeOn(registry, {
      name: 'rtb_trust_restart_bare_pods',
      help: 'Stale Pods without an owner: never restarted, to be replaced by their creator.',
      labelNames: [],
    }),
    optedOutPods: gaugeOn(registry, {
      name: 'rtb_trust_restart_opted_out_pods',
      help: 'Stale Pods whose Pod template or owner says restart-on-trust-change: "false".',
      labelNames: [],
    }),
    ownersRestarted: counterOn(registry, {
      name: 'rtb_trust_restart_owners_restarted_total',
      help: 'Workloads restarted by the trust-bundle hash on their Pod template, by kind.',
      labelNames: ['kind'],
    }),
    evictions: counterOn(registry, {
      name: 'rtb_trust_restart_evictions_total',
      help: 'Stale Pods of other owners evicted through the Eviction API.',
      labelNames: [],
    }),
    evictionsBlocked: counterOn(registry, {
      name: 'rtb_trust_restart_evictions_blocked_total',
      help: 'Evictions refused by a PodDisruptionBudget (retried with backoff).',
      labelNames: [],
    }),
    pastDeadline: counterOn(registry, {
      name: 'rtb_trust_restart_past_deadline_total',
      help: 'Restarts not completed within --restart-deadline (reported; the next one went on), by kind.',
      labelNames: ['kind'],
    }),
    active: gaugeOn(registry, {
      name: 'rtb_trust_restart_active',
      help: '1 while this replica is the active trust-bundle restarter (holds the Lease).',
      labelNames: [],
    }),
    requests: counterOn(registry, {
      name: 'rtb_trust_restart_api_requests_total',
      help: 'API requests of the restarter (ReplicaSet and workload reads, template patches, evictions), by call.',
      labelNames: ['call'],
    }),
  };
}
