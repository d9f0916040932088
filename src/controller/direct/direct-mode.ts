import { CoreV1Api } from '@kubernetes/client-node';
import { KeepAliveAccess } from '../../kube/keep-alive-access.js';
import { UNFENCED, type LeaseFence } from '../../kube/lease-fence.js';
import { LoopLagGate } from '../../kube/loop-lag-gate.js';
import { LoopPacer } from '../../kube/loop-pacer.js';
import { WorkQueue } from '../../kube/work-queue.js';
import { PrometheusWorkQueueMetrics } from '../../kube/workqueue-metrics.js';
import { PrometheusReconcileMetrics } from '../../kube/reconcile-metrics.js';
import { CaStore } from '../../pki/ca-store.js';
import { validateServingPolicy } from '../../serving-cert/serving-policy.js';
import { BootstrapperReconciler } from './bootstrapper-reconciler.js';
import { CaUpkeep } from './ca-upkeep.js';
import { DirectCaches } from './direct-caches.js';
import { createDirectMetrics, refreshStateGauges } from './direct-metrics.js';
import { RuntimeClientPool } from './runtime-clients.js';
import {
  resolveDirectModeSettings,
  type DirectMode,
  type DirectModeChoices,
  type DirectModeOptions,
} from './direct-mode-options.js';
import { DriftRepairs } from './drift-repairs.js';
import { RolloutCoordinator } from '../rollout/rollout-coordinator.js';
import { createRolloutMetrics } from '../rollout/rollout-metrics.js';
import { RevisionStore } from '../rollout/revision-store.js';
import { startRuntimeMirror, type RuntimeMirror } from './runtime-mirror.js';
import { startDriftEndpoint, type DriftEndpoint } from './drift-endpoint.js';
import { PeriodicResync } from './periodic-resync.js';
import { ShardedWork } from './sharded-work.js';
import { SourceFanout } from './source-fanout.js';
import { attachFleetExpiryMetrics, type FleetRuntime } from '../expiry/fleet-expiry.js';
import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import type { ModeContext, ModeHandle } from '../mode.js';

/**
 * Connections to the KCP at once: its watches (a handful, each holding one) and the status writes
 * and finalizers of a fan-out (a few ms each on the KCP: 32 carry thousands a second).
 */
const KCP_MAX_SOCKETS = 32;

/**
 * A callback handed to a part built before the part that answers it: where two parts need each
 * other, the earlier one gets `call` and the later one is connected once it exists. Until then
 * `call` answers with the fallback; nothing calls it that early (the parts start after wiring).
 */
class Hook<A extends unknown[], R> {
  private target: (...args: A) => R;

  constructor(fallback: (...args: A) => R) {
    this.target = fallback;
  }

  readonly call = (...args: A): R => this.target(...args);

  connect(target: (...args: A) => R): void {
    this.target = target;
  }
}

/**
 * Direct mode: every RuntimeBootstrapper's runtime gets the webhook and the current source set
 * written directly. Fan-out is a keyed queue with bounded concurrency and per-runtime backoff,
 * so one slow or failing runtime never holds the others back. This function wires the parts:
 * the caches (direct-caches.ts), the source set (source-fanout.ts), the reconciler, sharding
 * across replicas (sharded-work.ts), drift repairs (drift-repairs.ts), the CA (ca-upkeep.ts)
 * and the Runtime mirror (runtime-mirror.ts). It reads top to bottom: the settings, then each
 * part after the parts it uses (the cycles closed by {@link Hook}s), then the start in order.
 */
export async function startDirectMode(o: DirectModeOptions): Promise<DirectMode> {
  const s = resolveDirectModeSettings(o);
  validateServingPolicy(s.servingPolicy);
  const ns = o.namespace;
  const log = o.logger.child({ mode: 'direct' });
  const metrics = createDirectMetrics(o.registry);

  // The cycles between parts, connected below once both sides exist.
  const admits = new Hook<[key: string], boolean>(() => true);
  const cacheChanged = new Hook<[old: RuntimeBootstrapper | undefined, rb: RuntimeBootstrapper], void>(
    () => undefined,
  );
  const cacheRemoved = new Hook<[], void>(() => undefined);
  const forcePass = new Hook<[key: string], void>(() => undefined);
  const reconciled = new Hook<[key: string, ok: boolean], void>(() => undefined);

  // Keep-alive to the KCP: status writes, finalizers and watches reuse connections, at most
  // KCP_MAX_SOCKETS of them (a fan-out's status writes queue for one rather than open hundreds).
  const kcp = new KeepAliveAccess(o.kubeConfig, { maxSockets: KCP_MAX_SOCKETS });
  const cas =
    o.caStore ?? new CaStore(o.kubeConfig.makeApiClient(CoreV1Api), { namespace: ns, name: s.caSecretName });
  const queue = new WorkQueue({
    name: 'runtimebootstrapper',
    metrics: new PrometheusWorkQueueMetrics(o.registry),
    reconcileMetrics: new PrometheusReconcileMetrics(o.registry),
    // Sharded, only this replica's runtimes (connected to the shard below).
    admit: admits.call,
  });
  const enqueue = (key: string): void => {
    queue.add(key);
  };
  const caches = new DirectCaches({
    kcp,
    namespace: ns,
    kubeconfigSelector: s.kubeconfigSelector,
    logger: log,
    on: { reconcile: enqueue, changed: cacheChanged.call, removed: cacheRemoved.call },
  });
  const enqueueAll = (): void => {
    for (const key of caches.keys()) queue.add(key);
  };
  const rollout = s.rollout
    ? new RolloutCoordinator({
        kcp,
        policyName: s.rollout.policyName,
        bootstrappers: caches.bootstrappers,
        sources: () => o.sources.snapshot(),
        release: s.release,
        revisions: new RevisionStore(kcp, ns),
        autoRollback: s.rollout.autoRollback,
        metrics: createRolloutMetrics(o.registry),
        logger: log.child({ part: 'rollout' }),
        queueMetrics: new PrometheusWorkQueueMetrics(o.registry),
        enqueue,
      })
    : undefined;
  const sources = new SourceFanout({
    sources: o.sources,
    coalesceMs: s.coalesceMs,
    logger: log,
    fanOut: () => {
      rollout?.poke();
      // Under a policy's plan the new set reaches each runtime through it (its wave), not at once.
      if (rollout?.planning() !== true) enqueueAll();
    },
  });
  // The turns of the event loop, shared by the reconciles' starts and the runtimes' answers.
  const pacer = new LoopPacer();
  // Every call to a runtime bounded: the cap on an answer, the deadline of a call, and the stop.
  const pool = new RuntimeClientPool({
    limits: { deadlineMs: s.runtimeDeadlineMs },
    pace: () => pacer.resume(),
  });
  // Across replicas (sharding on): only this replica's share of the runtimes is worked here.
  const shard = s.shard
    ? new ShardedWork({
        kubeConfig: o.kubeConfig,
        kcp,
        namespace: ns,
        logger: log,
        registry: o.registry,
        queue,
        settings: s.shard,
        bootstrappers: caches.bootstrappers,
      })
    : undefined;
  if (shard) admits.connect((key) => shard.admits(key));
  const sharded = <T>(key: string, work: (fence: LeaseFence) => Promise<T>): Promise<T | undefined> =>
    shard ? shard.run(key, work) : work(UNFENCED);
  const periodic = new PeriodicResync({
    periodMs: s.resyncMs,
    fullEvery: s.fullResyncEvery,
    keys: () => caches.keys(),
    keyOfRuntime: (runtimeId) => caches.keyOfRuntime(runtimeId),
    works: (key) => shard?.admits(key) ?? true,
    force: forcePass.call,
    registry: o.registry,
    logger: log,
  });
  // Fewer reconciles at once while the event loop runs late (CPU-bound) or the KCP answers 429:
  // drift repairs (their own queue, not gated), probes and lease renewals keep getting through
  // during a fan-out.
  const gate = new LoopLagGate({ max: s.concurrency, pacer });
  const reconciler = new BootstrapperReconciler({
    kcp,
    attestations: periodic.book,
    bootstrappers: caches.bootstrappers,
    identityOf: (rb) => caches.identityOf(rb),
    kubeconfigSecrets: caches.kubeconfigs,
    pool,
    cas,
    drift: s.drift,
    servingPolicy: s.servingPolicy,
    webhook: s.webhookRouting,
    release: s.release,
    currentSet: () => sources.current(),
    metrics,
    logger: log,
    rollout,
    runtimeTimeoutMs: s.runtimeTimeoutMs,
    trustPollMs: s.trustPollMs,
    onReconciled: reconciled.call,
    kcpThrottled: () => {
      gate.throttled();
    },
  });
  const force = (key: string): void => {
    reconciler.force(key);
    queue.add(key);
  };
  forcePass.connect(force);
  const forceAll = (): void => {
    for (const key of caches.keys()) reconciler.force(key);
    enqueueAll();
  };
  const drift = new DriftRepairs({
    reconciler,
    queue,
    keyOfRuntime: (runtimeId) => caches.keyOfRuntime(runtimeId),
    run: sharded,
    shard,
    registry: o.registry,
    concurrency: s.concurrency,
    confirmDelayMs: s.driftConfirmDelayMs,
  });
  reconciled.connect((key, ok) => {
    drift.reconciled(key, ok);
  });
  cacheChanged.connect((old, rb) => {
    // A drift report another replica received for a runtime we work.
    if (old) drift.updated(old, rb);
    // A status moved: the rollout may advance (or halt).
    rollout?.poke();
  });
  // One runtime fewer: its wave may be complete now.
  cacheRemoved.connect(() => {
    rollout?.poke();
  });
  // Started in dependency order: the CA and the caches before the first reconcile.
  if (!o.caStore) await cas.load();
  sources.start();
  pool.start();
  await caches.start();
  sources.refresh();
  // The rollout's first pass before any reconcile: no runtime gets a revision its wave has not reached.
  await rollout?.start();
  gate.start();
  await shard?.start();
  const running = queue.start((key) => sharded(key, (fence) => reconciler.reconcile(key, fence)), {
    concurrency: s.concurrency,
    gate,
  });
  enqueueAll();
  periodic.start();
  const gauges = setInterval(() => {
    refreshStateGauges(
      metrics,
      caches.bootstrappers.list().map((rb) => rb.status),
    );
    metrics.runtimeClients.set(pool.size);
    metrics.admittedReconciles.set(gate.limit);
  }, 2_000);
  gauges.unref();
  drift.start();

  // The parts that serve runtimes or follow the CA: built once the fan-out runs.
  const endpoint: DriftEndpoint | undefined = s.driftListener
    ? await startDriftEndpoint({
        options: s.driftListener,
        cas,
        bootstrappers: caches.bootstrappers,
        keyOfRuntime: (runtimeId) => caches.keyOfRuntime(runtimeId),
        kubeconfigs: caches.kubeconfigs,
        resync: (runtimeId, receivedAt, object) => {
          drift.report(runtimeId, receivedAt, object);
        },
        attest: periodic.attest,
        registry: o.registry,
        logger: log,
      })
    : undefined;
  const caUpkeep = new CaUpkeep({
    cas,
    kcp,
    rotation: s.caRotation,
    logger: log,
    onChanged: async () => {
      log.info('CA changed; re-issuing certificates on every runtime');
      await endpoint?.refresh();
      forceAll();
    },
  });
  await caUpkeep.start();
  const detachExpiry = attachFleetExpiryMetrics(
    o.registry,
    {
      caNotAfter: () => cas.current().certificate.notAfter.getTime(),
      listenerNotAfter: () => endpoint?.servingNotAfter(),
      *runtimes(): Iterable<FleetRuntime> {
        for (const rb of caches.bootstrappers.list()) {
          const key = `${rb.metadata.namespace}/${rb.metadata.name}`;
          if (shard && !shard.admits(key)) continue;
          yield {
            key,
            runtimeId: rb.spec.runtimeID,
            state: rb.status?.state ?? 'Pending',
            driftNotAfter: reconciler.driftCertificateNotAfter(key),
          };
        }
      },
    },
    { perRuntime: s.perRuntimeMetrics },
  );
  const mirror: RuntimeMirror | undefined =
    s.autoCreateSelector !== undefined
      ? await startRuntimeMirror({
          kcp,
          namespace: ns,
          selector: s.autoCreateSelector,
          bootstrappers: caches.bootstrappers,
          logger: log,
          shard,
        })
      : undefined;
  log.info(
    { runtimes: caches.bootstrappers.list().length, release: s.release.version },
    'direct mode started',
  );

  /** The parts in the order they stop; see stop(). */
  const stopParts = async (options: { readonly releaseShard?: boolean }): Promise<void> => {
    // First, so the runtimes in flight finish and the others take ours at once (released Lease).
    await shard?.stop({ release: options.releaseShard ?? true });
    sources.stop();
    await rollout?.stop();
    await caUpkeep.stop();
    await endpoint?.stop();
    periodic.stop();
    clearInterval(gauges);
    detachExpiry();
    await mirror?.stop();
    await drift.stop();
    await queue.shutDownWithDrain();
    await running;
    gate.stop();
    await caches.stop();
    pool.stop();
    kcp.close();
  };

  return {
    reconciler,
    cas,
    driftPort: endpoint?.port,
    rotateCa: (graceMs) => caUpkeep.rotate(graceMs),
    resyncAll: forceAll,
    periodicResync: () => periodic.tick(),
    resync(runtimeId) {
      const key = caches.keyOfRuntime(runtimeId);
      if (key === undefined) return false;
      force(key);
      return true;
    },
    async stop(options = {}) {
      // Reconciles and repairs in flight get a while to finish; then their calls to runtimes are
      // abandoned, so no runtime (silent, dripping) holds the stop past the Pod's grace period.
      const abandon = setTimeout(() => {
        log.warn({ afterMs: s.stopDrainMs }, 'stopping: abandoning the calls to runtimes still in flight');
        pool.abortCalls();
      }, s.stopDrainMs);
      try {
        await stopParts(options);
      } finally {
        clearTimeout(abandon);
      }
    },
  };
}

/**
 * Direct mode's own settings as the controller app runs it: the fan-out's concurrency, resync
 * and coalescing window are the app's mode options (one value for either mode), so not here.
 */
export type DirectModeStarterSettings = Omit<DirectModeChoices, 'concurrency' | 'resyncMs' | 'coalesceMs'>;

/**
 * Adapts direct mode to the controller app's mode contract: runs only while this replica leads
 * (the app starts and stops it), with the app's sources, registry, logger and mode options.
 */
export function directModeStarter(
  settings: DirectModeStarterSettings,
): (ctx: ModeContext) => Promise<ModeHandle> {
  return async (ctx) => {
    const mode = await startDirectMode({
      kubeConfig: ctx.kubeConfig,
      namespace: ctx.namespace,
      sources: ctx.sources,
      logger: ctx.logger,
      registry: ctx.registry,
      ...settings,
      concurrency: ctx.options.concurrency,
      resyncMs: ctx.options.resyncMs,
      coalesceMs: ctx.options.coalesceMs,
    });
    return { stop: () => mode.stop() };
  };
}
