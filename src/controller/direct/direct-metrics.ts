import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { counterOn, gaugeOn, histogramOn } from '../../telemetry/prom-metrics.js';
import type { BootstrapperState } from '../../api/runtime-bootstrapper.js';

/** Direct-mode metrics. No runtime label anywhere: 5,000 runtimes would explode the series. */
export interface DirectMetrics {
  readonly runtimesByState: Gauge<'state'>;
  readonly runtimesByVersion: Gauge<'version'>;
  readonly propagationSeconds: Histogram<never>;
  readonly syncErrors: Counter<'reason'>;
  readonly runtimeClients: Gauge<never>;
  /** Reconciles the event-loop gate admits at once now (at most the concurrency). */
  readonly admittedReconciles: Gauge<never>;
  /** Passes stopped before a runtime write because this replica's shard Lease was no longer held. */
  readonly fencedPasses: Counter<'pass'>;
}

const STATES: readonly BootstrapperState[] = [
  'Pending',
  'Installing',
  'Ready',
  'Error',
  'Deleting',
  'Paused',
];

/** Registers the direct-mode metrics. */
export function createDirectMetrics(registry: Registry): DirectMetrics {
  // get-or-create: direct mode starts again each time this replica regains leadership.
  const runtimesByState = gaugeOn(registry, {
    name: 'rtb_runtimes',
    help: 'RuntimeBootstrappers by state.',
    labelNames: ['state'],
  });
  for (const s of STATES) runtimesByState.set({ state: s }, 0);
  return {
    runtimesByState,
    runtimesByVersion: gaugeOn(registry, {
      name: 'rtb_runtimes_by_applied_version',
      help: 'RuntimeBootstrappers by the source-set version applied (few distinct values at any time).',
      labelNames: ['version'],
    }),
    propagationSeconds: histogramOn(registry, {
      name: 'rtb_propagation_seconds',
      help: 'Time from a source change on the KCP until a runtime has the new set applied.',
      labelNames: [],
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
    }),
    syncErrors: counterOn(registry, {
      name: 'rtb_runtime_sync_errors_total',
      help: 'Failed runtime reconciles by reason (the runtime itself is named in its CR status).',
      labelNames: ['reason'],
    }),
    runtimeClients: gaugeOn(registry, {
      name: 'rtb_runtime_clients',
      help: 'Runtime API clients held.',
      labelNames: [],
    }),
    admittedReconciles: gaugeOn(registry, {
      name: 'rtb_reconciles_admitted',
      help: 'Runtime reconciles admitted at once, lowered while the event loop runs late (at most the concurrency).',
      labelNames: [],
    }),
    fencedPasses: counterOn(registry, {
      name: 'rtb_shard_fenced_passes_total',
      help: 'Reconciles and drift repairs (pass) stopped before a runtime write because this replica no longer held its shard Lease.',
      labelNames: ['pass'],
    }),
  };
}

/** Recomputes the per-state and per-version gauges from the statuses in the cache. */
export function refreshStateGauges(
  metrics: DirectMetrics,
  statuses: Iterable<{ state?: BootstrapperState; appliedVersion?: string } | undefined>,
): void {
  const byState = new Map<string, number>(STATES.map((s) => [s, 0]));
  const byVersion = new Map<string, number>();
  for (const s of statuses) {
    const state = s?.state ?? 'Pending';
    byState.set(state, (byState.get(state) ?? 0) + 1);
    if (s?.appliedVersion) byVersion.set(s.appliedVersion, (byVersion.get(s.appliedVersion) ?? 0) + 1);
  }
  for (const [state, n] of byState) metrics.runtimesByState.set({ state }, n);
  metrics.runtimesByVersion.reset();
  for (const [version, n] of byVersion) metrics.runtimesByVersion.set({ version }, n);
}
