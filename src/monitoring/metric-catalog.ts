/**
 * The metric families each process serves, read from the code that registers them: every
 * factory is run on a registry of its own here, so the dashboards and alerts are checked against
 * the names and labels that really are served (a renamed metric or label makes rendering fail).
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createControllerMetrics } from '../controller/controller-metrics.js';
import { createDirectMetrics } from '../controller/direct/direct-metrics.js';
import { AttestationBook } from '../controller/direct/attestation-book.js';
import { attestIntervalSeconds, PeriodicResync } from '../controller/direct/periodic-resync.js';
import { RepairLatency } from '../controller/direct/repair-latency.js';
import { attachFleetExpiryMetrics } from '../controller/expiry/fleet-expiry.js';
import { attachSourceExpiryMetrics } from '../controller/expiry/source-expiry.js';
import { createRolloutMetrics } from '../controller/rollout/rollout-metrics.js';
import { PrometheusReconcileMetrics } from '../kube/reconcile-metrics.js';
import { PrometheusWorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { silentLogger } from '../telemetry/logger.js';
import { createAttestationMetrics } from '../drift/attestation-metrics.js';
import { createForwarderMetrics } from '../drift/forwarder-metrics.js';
import { createListenerMetrics } from '../drift/listener-metrics.js';
import { createEscapedMetrics } from '../runtime-agent/escaped-pods/escaped-metrics.js';
import { createRestartMetrics } from '../runtime-agent/trust-restart/restart-metrics.js';
import { createWebhookMetrics } from '../webhook/webhook-metrics.js';

/** The processes whose metrics the monitoring reads. */
export type MetricSource = 'controller' | 'webhook';

/** One metric family as served. */
export interface MetricFamily {
  readonly name: string;
  readonly type: string;
  readonly help: string;
  readonly labelNames: readonly string[];
}

/** The families served by each process. */
export type MetricCatalog = Readonly<Record<MetricSource, ReadonlyMap<string, MetricFamily>>>;

function familiesOf(registry: Registry): ReadonlyMap<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  for (const m of registry.getMetricsAsArray()) {
    // prom-client keeps the label names on the collector; its types do not declare them.
    const labelNames = (m as unknown as { readonly labelNames?: readonly string[] }).labelNames ?? [];
    families.set(m.name, { name: m.name, type: String(m.type), help: m.help, labelNames });
  }
  return families;
}

/** `rtb controller`'s families: its own, direct mode's (with the opt-in per-runtime ones), the process's. */
function controllerFamilies(): ReadonlyMap<string, MetricFamily> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  createControllerMetrics(registry);
  createDirectMetrics(registry);
  createRolloutMetrics(registry);
  createListenerMetrics(registry);
  new PrometheusWorkQueueMetrics(registry);
  new PrometheusReconcileMetrics(registry);
  new RepairLatency(registry);
  new PeriodicResync({
    periodMs: 0,
    fullEvery: 1,
    keys: () => [],
    keyOfRuntime: () => undefined,
    works: () => true,
    force: () => undefined,
    book: new AttestationBook(attestIntervalSeconds(0)),
    registry,
    logger: silentLogger(),
  });
  attachSourceExpiryMetrics(registry, () => ({ versions: {}, version: '', problems: [] }));
  attachFleetExpiryMetrics(
    registry,
    { caNotAfter: () => undefined, listenerNotAfter: () => undefined, runtimes: () => [] },
    { perRuntime: true },
  );
  return familiesOf(registry);
}

/** `rtb webhook`'s families: admission, drift forwarder and attestor, trust restarter, the process's. */
function webhookFamilies(): ReadonlyMap<string, MetricFamily> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  createWebhookMetrics(registry);
  createForwarderMetrics(registry);
  createAttestationMetrics(registry);
  createRestartMetrics(registry);
  createEscapedMetrics(registry);
  return familiesOf(registry);
}

let cached: MetricCatalog | undefined;

/** The families served by the controller and the webhook (built once per process). */
export function metricCatalog(): MetricCatalog {
  cached ??= { controller: controllerFamilies(), webhook: webhookFamilies() };
  return cached;
}
