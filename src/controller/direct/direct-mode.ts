import { CoreV1Api } from '@kubernetes/client-node';
import { KeepAliveAccess } from '../../kube/keep-alive-access.js';
import { UNFENCED, type LeaseFence } from '../../kube/lease-fence.js';
import { LoopLagGate } from '../../kube/loop-lag-gate.js';
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
  DEFAULT_DIRECT_CONCURRENCY,
  DEFAULT_FULL_RESYNC_EVERY,
  DEFAULT_STOP_DRAIN_MS,
  DRIFT_CONFIRM_DELAY_MS,
  type DirectMode,
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

/**
 * Connections to the KCP at once: its watches (a handful, each holding one) and the status writes
 * and finalizers of a fan-out (a few ms each on the KCP: 32 carry thousands a second).
 */
const KCP_MAX_SOCKETS = 32;

/**
 * Direct mode: every RuntimeBootstrapper's runtime gets the webhook and the current source set
 * written directly. Fan-out is a keyed queue with bounded concurrency and per-runtime backoff,
 * so one slow or failing runtime never holds the others back. This function wires the parts:
 * the caches (direct-caches.ts), the source set (source-fanout.ts), the reconciler, sharding
 * across replicas (sharded-work.ts), drift repairs (drift-repairs.ts), the CA (ca-upkeep.ts)
 * and the Runtime mirror (runtime-mirror.ts).
 */
export async function startDirectMode(o: DirectModeOptions): Promise<DirectMode> {
  const log = o.logger.child({ mode: 'direct' });
  if (o.servingPolicy) validateServingPolicy(o.servingPolicy);
  const metrics = createDirectMetrics(o.registry);
  const ns = o.namespace;
  // Keep-alive to the KCP: status writes, finalizers and watches reuse connections, at most
  // KCP_MAX_SOCKETS of them (a fan-out's status writes queue for one rather than open hundreds).
  const kcp = new KeepAliveAccess(o.kubeConfig, { maxSockets: KCP_MAX_SOCKETS });
  const queue = new WorkQueue({
    name: 'runtimebootstrapper',
    metrics: new PrometheusWorkQueueMetrics(o.registry),
    reconcileMetrics: new PrometheusReconcileMetrics(o.registry),
    admit: (key: string): boolean => shard?.admits(key) ?? true,
  });
  const enqueue = (key: string): void => {
    queue.add(key);
  };
  const caches = new DirectCaches({
    kcp,
    namespace: ns,
    ...(o.kubeconfigSelector !== undefined ? { kubeconfigSelector: o.kubeconfigSelector } : {}),
    logger: log,
    on: {
      reconcile: enqueue,
      changed: (old, rb) => {
        // A drift report another replica received for a runtime we work.
        if (old) drift.updated(old, rb);
        // A status moved: the rollout may advance (or halt).
        rollout?.poke();
      },
      // One runtime fewer: its wave may be complete now.
      removed: () => {
        rollout?.poke();
      },
    },
  });
  const enqueueAll = (): void => {
    for (const key of caches.keys()) queue.add(key);
  };
  const cas =
    o.caStore ??
    new CaStore(o.kubeConfig.makeApiClient(CoreV1Api), {
      namespace: ns,
      name: o.caSecretName ?? 'rt-bootstrapper-ca',
    });
  if (!o.caStore) await cas.load();

  const sources = new SourceFanout({
    sources: o.sources,
    coalesceMs: o.coalesceMs ?? 500,
    logger: log,
    fanOut: () => {
      rollout?.poke();
      // Under a policy's plan the new set reaches each runtime through it (its wave), not at once.
      if (rollout?.planning() !== true) enqueueAll();
    },
  });
  sources.start();
  // Every call to a runtime bounded: the cap on an answer, the deadline of a call, and the stop.
  const pool = new RuntimeClientPool({ limits: { deadlineMs: o.runtimeDeadlineMs } });
  pool.start();
  const rollout = o.rollout
    ? new RolloutCoordinator({
        kcp,
        policyName: o.rollout.policyName,
        bootstrappers: caches.bootstrappers,
        sources: () => o.sources.snapshot(),
        release: o.release,
        revisions: new RevisionStore(kcp, ns),
        autoRollback: o.rollout.autoRollback,
        metrics: createRolloutMetrics(o.registry),
        logger: log.child({ part: 'rollout' }),
        queueMetrics: new PrometheusWorkQueueMetrics(o.registry),
        enqueue,
      })
    : undefined;
  const resyncMs = o.resyncMs ?? 10 * 60_000;
  const periodic = new PeriodicResync({
    periodMs: resyncMs,
    fullEvery: o.fullResyncEvery ?? DEFAULT_FULL_RESYNC_EVERY,
    keys: () => caches.keys(),
    keyOfRuntime: (runtimeId) => caches.keyOfRuntime(runtimeId),
    works: (key) => shard?.admits(key) ?? true,
    force: (key) => {
      reconciler.force(key);
      queue.add(key);
    },
    registry: o.registry,
    logger: log,
  });
  const reconciler = new BootstrapperReconciler({
    kcp,
    attestations: periodic.book,
    bootstrappers: caches.bootstrappers,
    identityOf: (rb) => caches.identityOf(rb),
    kubeconfigSecrets: caches.kubeconfigs,
    pool,
    cas,
    ...(o.drift ? { drift: o.drift } : {}),
    ...(o.servingPolicy ? { servingPolicy: o.servingPolicy } : {}),
    ...(o.webhookRouting ? { webhook: o.webhookRouting } : {}),
    release: o.release,
    currentSet: () => sources.current(),
    metrics,
    logger: log,
    ...(rollout ? { rollout } : {}),
    ...(o.runtimeTimeoutMs !== undefined ? { runtimeTimeoutMs: o.runtimeTimeoutMs } : {}),
    ...(o.trustPollMs !== undefined ? { trustPollMs: o.trustPollMs } : {}),
    onReconciled: (key, ok) => {
      drift.reconciled(key, ok);
    },
  });
  // Across replicas (sharding on): only this replica's share of the runtimes is worked here.
  const shard: ShardedWork | undefined = o.shard
    ? new ShardedWork({
        kubeConfig: o.kubeConfig,
        kcp,
        namespace: ns,
        logger: log,
        registry: o.registry,
        queue,
        settings: o.shard,
        bootstrappers: caches.bootstrappers,
      })
    : undefined;
  const sharded = <T>(key: string, work: (fence: LeaseFence) => Promise<T>): Promise<T | undefined> =>
    shard ? shard.run(key, work) : work(UNFENCED);
  const concurrency = o.concurrency ?? DEFAULT_DIRECT_CONCURRENCY;
  const drift = new DriftRepairs({
    reconciler,
    queue,
    keyOfRuntime: (runtimeId) => caches.keyOfRuntime(runtimeId),
    run: sharded,
    ...(shard ? { shard } : {}),
    registry: o.registry,
    concurrency,
    confirmDelayMs: o.driftConfirmDelayMs ?? DRIFT_CONFIRM_DELAY_MS,
  });

  await caches.start();
  sources.refresh();
  // The rollout's first pass before any reconcile: no runtime gets a revision its wave has not reached.
  await rollout?.start();
  // Fewer reconciles at once while the event loop runs late (CPU-bound): drift repairs (their own
  // queue, not gated), probes and lease renewals keep getting through during a fan-out.
  const gate = new LoopLagGate({ max: concurrency });
  gate.start();
  await shard?.start();
  const running = queue.start((key) => sharded(key, (fence) => reconciler.reconcile(key, fence)), {
    concurrency,
    gate,
  });
  enqueueAll();

  const forceAll = (): void => {
    for (const key of caches.keys()) reconciler.force(key);
    enqueueAll();
  };
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
  const endpoint: DriftEndpoint | undefined = o.driftListener
    ? await startDriftEndpoint({
        options: o.driftListener,
        cas,
        bootstrappers: caches.bootstrappers,
        keyOfRuntime: (runtimeId) => caches.keyOfRuntime(runtimeId),
        kubeconfigs: caches.kubeconfigs,
        resync: (runtimeId, receivedAt) => {
          drift.report(runtimeId, receivedAt);
        },
        attest: periodic.attest,
        registry: o.registry,
        logger: log,
      })
    : undefined;
  const caUpkeep = new CaUpkeep({
    cas,
    kcp,
    ...(o.caRotation ? { rotation: o.caRotation } : {}),
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
    { perRuntime: o.perRuntimeMetrics === true },
  );
  const mirror: RuntimeMirror | undefined =
    o.autoCreateSelector !== undefined
      ? await startRuntimeMirror({
          kcp,
          namespace: ns,
          selector: o.autoCreateSelector,
          bootstrappers: caches.bootstrappers,
          logger: log,
          ...(shard ? { shard } : {}),
        })
      : undefined;
  log.info(
    { runtimes: caches.bootstrappers.list().length, release: o.release.version },
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
  const stopDrainMs = o.stopDrainMs ?? DEFAULT_STOP_DRAIN_MS;

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
      reconciler.force(key);
      queue.add(key);
      return true;
    },
    async stop(options = {}) {
      // Reconciles and repairs in flight get a while to finish; then their calls to runtimes are
      // abandoned, so no runtime (silent, dripping) holds the stop past the Pod's grace period.
      const abandon = setTimeout(() => {
        log.warn({ afterMs: stopDrainMs }, 'stopping: abandoning the calls to runtimes still in flight');
        pool.abortCalls();
      }, stopDrainMs);
      try {
        await stopParts(options);
      } finally {
        clearTimeout(abandon);
      }
    },
  };
}
