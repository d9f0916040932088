import type { Counter, Gauge, Registry } from 'prom-client';
import { counterOn, gaugeOn } from '../../telemetry/prom-metrics.js';

/**
 * The escaped-Pod count's metrics: by reason and owner kind only, never a Pod, owner or
 * namespace name (the report in the status ConfigMap and the logs name owners).
 */
export interface EscapedMetrics {
  /** Running Pods in scope that do not follow the set in force (each once); 0 unless this replica leads. */
  readonly pods: Gauge;
  /** Of those, by reason (a Pod under each of its reasons). */
  readonly byReason: Gauge<'reason'>;
  /** Of those, Pods without an owner (never restarted). */
  readonly bare: Gauge;
  /** Counts finished, by result (`ok`, `error`). */
  readonly counts: Counter<'result'>;
  /** Owners the repair looked at, by outcome and kind. */
  readonly repairs: Counter<'outcome' | 'kind'>;
}

/** The metrics on `registry` (shared if registered before). */
export function createEscapedMetrics(registry: Registry): EscapedMetrics {
  return {
    pods: gaugeOn(registry, {
      name: 'rtb_webhook_escaped_pods',
      help: 'Running Pods in scope that do not follow the set in force (admitted without the webhook), as last counted by the leader of the runtime agent.',
      labelNames: [],
    }),
    byReason: gaugeOn(registry, {
      name: 'rtb_webhook_escaped_pod_reasons',
      help: 'Escaped Pods by reason (unstamped, registry, pull-secret, trust-bundle, env); a Pod counts under each of its reasons.',
      labelNames: ['reason'],
    }),
    bare: gaugeOn(registry, {
      name: 'rtb_webhook_escaped_bare_pods',
      help: 'Escaped Pods without an owner: reported, never restarted.',
      labelNames: [],
    }),
    counts: counterOn(registry, {
      name: 'rtb_webhook_escaped_counts_total',
      help: 'Counts of the escaped Pods (a paged list of the running Pods), by result.',
      labelNames: ['result'],
    }),
    repairs: counterOn(registry, {
      name: 'rtb_webhook_escaped_repairs_total',
      help: 'Owners of escaped Pods the repair looked at, by outcome (restarted, repaired-before, not-rollable, opted-out, on-delete, gone, refused) and kind.',
      labelNames: ['outcome', 'kind'],
    }),
  };
}
