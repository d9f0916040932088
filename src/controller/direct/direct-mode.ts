import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import { type RuntimeBootstrapper, runtimeBootstrappersPath } from '../../api/runtime-bootstrapper.js';
import { KeepAliveAccess } from '../../kube/keep-alive-access.js';
import { createListerWatcher } from '../../kube/list-watch.js';
import { LoopLagGate } from '../../kube/loop-lag-gate.js';
import { Reflector } from '../../kube/reflector.js';
import { stripManagedFields } from '../../kube/reflector-options.js';
import { WorkQueue } from '../../kube/work-queue.js';
import { PrometheusWorkQueueMetrics } from '../../kube/workqueue-metrics.js';
import { PrometheusReconcileMetrics } from '../../kube/reconcile-metrics.js';
import { CaStore } from '../../pki/ca-store.js';
import { validateServingPolicy } from '../../pki/serving-policy.js';
import { BootstrapperReconciler } from './bootstrapper-reconciler.js';
import { needsReconcile } from './bootstrapper-events.js';
import { BootstrapperIndex } from './bootstrapper-index.js';
import { createDirectMetrics, refreshStateGauges } from './direct-metrics.js';
import { RuntimeClientPool } from './runtime-clients.js';
import { buildSyncSet, type SyncSetResult } from './sync-set.js';
import {
  DEFAULT_DIRECT_CONCURRENCY,
  DRIFT_CONFIRM_DELAY_MS,
  type DirectMode,
  type DirectModeOptions,
} from './direct-mode-options.js';
import { RepairConfirmations } from './repair-confirmations.js';
import { RolloutCoordinator } from '../rollout/rollout-coordinator.js';
import { createRolloutMetrics } from '../rollout/rollout-metrics.js';
import { RevisionStore } from '../rollout/revision-store.js';
import { startRuntimeMirror, type RuntimeMirror } from './runtime-mirror.js';
import { startDriftEndpoint, type DriftEndpoint } from './drift-endpoint.js';
import { driftRelayed } from './drift-relay.js';
import { ShardedWork } from './sharded-work.js';

/**
 * Connections to the KCP at once: its watches (a handful, each holding one) and the status writes
 * and finalizers of a fan-out (a few ms each on the KCP: 32 carry thousands a second).
 */
const KCP_MAX_SOCKETS = 32;

/**
 * Direct mode: every RuntimeBootstrapper's runtime gets the webhook and the current source set
 * written directly. Fan-out is a keyed queue with bounded concurrency and per-runtime backoff,
 * so one slow or failing runtime never holds the others back.
 */
export async function startDirectMode(o: DirectModeOptions): Promise<DirectMode> {
  const log = o.logger.child({ mode: 'direct' });
  if (o.servingPolicy) validateServingPolicy(o.servingPolicy);
  const metrics = createDirectMetrics(o.registry);
  const ns = o.namespace;
  // Keep-alive to the KCP: status writes, finalizers and watches reuse connections, at most
  // KCP_MAX_SOCKETS of them (a fan-out's status writes queue for one rather than open hundreds).
  const kcp = new KeepAliveAccess(o.kubeConfig, { maxSockets: KCP_MAX_SOCKETS });
  const bootstrappers = new Reflector<RuntimeBootstrapper>({
    name: 'runtimebootstrappers',
    listerWatcher: createListerWatcher<RuntimeBootstrapper>(kcp, runtimeBootstrappersPath(ns)),
    transform: stripManagedFields,
    logger: log,
  });
  const kubeconfigs = new Reflector<V1Secret>({
    name: 'kubeconfig secrets',
    listerWatcher: createListerWatcher<V1Secret>(kcp, `/api/v1/namespaces/${ns}/secrets`),
    transform: stripManagedFields,
    // Only KIM's kubeconfig Secrets, never every Secret of the namespace.
    labelSelector: o.kubeconfigSelector ?? 'kyma-project.io/runtime-id',
    logger: log,
  });
  const cas =
    o.caStore ??
    new CaStore(o.kubeConfig.makeApiClient(CoreV1Api), {
      namespace: ns,
      name: o.caSecretName ?? 'rt-bootstrapper-ca',
    });
  if (!o.caStore) await cas.load();

  let current: { result: SyncSetResult; changedAt: number } = {
    result: buildSyncSet(o.sources.snapshot()),
    changedAt: Date.now(),
  };
  const pool = new RuntimeClientPool();
  pool.start();
  const queueKey = (key: string): void => {
    queue.add(key);
  };
  const rollout = o.rollout
    ? new RolloutCoordinator({
        kcp,
        policyName: o.rollout.policyName,
        bootstrappers: bootstrappers.store,
        sources: () => o.sources.snapshot(),
        release: o.release,
        revisions: new RevisionStore(kcp, ns),
        autoRollback: o.rollout.autoRollback,
        metrics: createRolloutMetrics(o.registry),
        logger: log.child({ part: 'rollout' }),
        enqueue: queueKey,
        ...(o.rollout.periodMs !== undefined ? { periodMs: o.rollout.periodMs } : {}),
      })
    : undefined;
  const reconciler = new BootstrapperReconciler({
    kcp,
    bootstrappers: bootstrappers.store,
    kubeconfigSecrets: kubeconfigs.store,
    pool,
    cas,
    ...(o.drift ? { drift: o.drift } : {}),
    ...(o.servingPolicy ? { servingPolicy: o.servingPolicy } : {}),
    ...(o.webhookRouting ? { webhook: o.webhookRouting } : {}),
    release: o.release,
    currentSet: () => current,
    metrics,
    logger: log,
    ...(rollout ? { rollout } : {}),
    ...(o.runtimeTimeoutMs !== undefined ? { runtimeTimeoutMs: o.runtimeTimeoutMs } : {}),
    ...(o.trustPollMs !== undefined ? { trustPollMs: o.trustPollMs } : {}),
    onReconciled: (key, ok) => {
      endpoint?.reconciled(key, ok);
    },
  });
  let endpoint: DriftEndpoint | undefined;
  const queue = new WorkQueue({
    name: 'runtimebootstrapper',
    metrics: new PrometheusWorkQueueMetrics(o.registry),
    reconcileMetrics: new PrometheusReconcileMetrics(o.registry),
    admit: (key: string): boolean => shard?.admits(key) ?? true,
  });
  // Across replicas (sharding on): only this replica's share of the runtimes is worked here.
  const shardDeps = {
    kubeConfig: o.kubeConfig,
    kcp,
    namespace: ns,
    logger: log,
    registry: o.registry,
    queue,
  };
  const shard: ShardedWork | undefined = o.shard
    ? new ShardedWork({ ...shardDeps, settings: o.shard, bootstrappers: bootstrappers.store })
    : undefined;
  const sharded = <T>(key: string, work: () => Promise<T>): Promise<T | undefined> =>
    shard ? shard.run(key, work) : work();
  const enqueueAll = (): void => {
    for (const rb of bootstrappers.store.list()) queue.add(`${rb.metadata.namespace}/${rb.metadata.name}`);
  };

  const index = new BootstrapperIndex();
  bootstrappers.addEventHandler({
    onAdd: (rb) => {
      index.put(rb);
      queue.add(`${rb.metadata.namespace}/${rb.metadata.name}`);
      rollout?.poke();
    },
    onUpdate: (old, rb) => {
      index.put(rb);
      if (needsReconcile(old, rb)) queue.add(`${rb.metadata.namespace}/${rb.metadata.name}`);
      // A drift report another replica received for a runtime we work.
      if (shard?.decide(rb.spec.runtimeID).kind === 'work' && driftRelayed(old, rb))
        repairRuntime(rb.spec.runtimeID);
      // A status moved: the rollout may advance (or halt).
      rollout?.poke();
    },
    onDelete: (rb) => {
      index.remove(rb);
    },
  });
  const usersOf = (secret: V1Secret): readonly string[] =>
    index.keysOfSecret(secret.metadata?.namespace ?? '', secret.metadata?.name ?? '');
  kubeconfigs.addEventHandler({
    onUpdate: (_old, secret) => {
      // A rotated kubeconfig: the runtimes using it reconnect with the new credentials.
      for (const key of usersOf(secret)) queue.add(key);
    },
    onAdd: (secret) => {
      // A Secret that was missing: the runtimes that failed for want of it try again.
      for (const key of usersOf(secret))
        if (bootstrappers.store.get(key)?.status?.state === 'Error') queue.add(key);
    },
  });

  let coalesce: NodeJS.Timeout | undefined;
  const unsubscribe = o.sources.onChange(() => {
    // A burst of source events becomes one fan-out with the final set.
    if (coalesce) return;
    coalesce = setTimeout(() => {
      coalesce = undefined;
      current = { result: buildSyncSet(o.sources.snapshot()), changedAt: Date.now() };
      const r = current.result;
      log.info(
        r.ok ? { version: r.set.version } : { problem: r.reason },
        r.ok ? 'source set changed; fanning out' : 'source set inconsistent; not propagated',
      );
      rollout?.poke();
      enqueueAll();
    }, o.coalesceMs ?? 500);
  });

  bootstrappers.start();
  kubeconfigs.start();
  await Promise.all([bootstrappers.waitForSync(), kubeconfigs.waitForSync()]);
  current = { result: buildSyncSet(o.sources.snapshot()), changedAt: current.changedAt };
  // The rollout's first pass before any reconcile: no runtime gets a revision its wave has not reached.
  await rollout?.start();
  const concurrency = o.concurrency ?? DEFAULT_DIRECT_CONCURRENCY;
  // Fewer reconciles at once while the event loop runs late (CPU-bound): drift repairs (their own
  // queue, not gated), probes and lease renewals keep getting through during a fan-out.
  const gate = new LoopLagGate({ max: concurrency });
  gate.start();
  await shard?.start();
  const running = queue.start((key) => sharded(key, () => reconciler.reconcile(key)), {
    concurrency,
    gate,
  });
  enqueueAll();

  const resyncMs = o.resyncMs ?? 10 * 60_000;
  const resync =
    resyncMs > 0
      ? setInterval(() => {
          for (const rb of bootstrappers.store.list())
            reconciler.force(`${rb.metadata.namespace}/${rb.metadata.name}`);
          enqueueAll();
        }, resyncMs)
      : undefined;
  const gauges = setInterval(() => {
    refreshStateGauges(
      metrics,
      bootstrappers.store.list().map((rb) => rb.status),
    );
    metrics.runtimeClients.set(pool.size);
    metrics.admittedReconciles.set(gate.limit);
  }, 2_000);
  gauges.unref();

  const keyOfRuntime = (runtimeId: string): string | undefined => index.keyOfRuntime(runtimeId);
  // Drift repairs get their own queue: the set is re-applied at once, even while the runtime's
  // full reconcile runs, and the full reconcile follows.
  const repairs = new WorkQueue({
    name: 'drift-repair',
    metrics: new PrometheusWorkQueueMetrics(o.registry),
  });
  const repairing = repairs.start(
    async (key) => {
      await sharded(key, async () => {
        await reconciler.repairSet(key);
        endpoint?.reconciled(key, true);
      });
    },
    { concurrency },
  );
  // The drift webhook reports a write before the API server stores it, so an immediate repair
  // could land first and be overwritten by the tamper. A forced full reconcile therefore
  // follows a moment after the runtime's last report: it re-applies the set (and the webhook's
  // own objects) after the tamper is stored, and it stays out of the way of the fast path.
  const confirmations = new RepairConfirmations(o.driftConfirmDelayMs ?? DRIFT_CONFIRM_DELAY_MS, (key) => {
    reconciler.force(key);
    queue.add(key);
  });
  const repairRuntime = (runtimeId: string): string | undefined => {
    const key = keyOfRuntime(runtimeId);
    if (key === undefined) return undefined;
    const decision = shard?.decide(runtimeId).kind ?? 'work';
    // Another replica's (relayed to it), or ours but still the previous owner's: taking it over
    // reconciles it fully anyway. Either way no repair is measured here.
    if (decision !== 'work') {
      if (decision !== 'wait') shard?.relayDrift(key);
      return undefined;
    }
    repairs.add(key);
    confirmations.event(key);
    return key;
  };
  if (o.driftListener) {
    endpoint = await startDriftEndpoint({
      options: o.driftListener,
      cas,
      bootstrappers: bootstrappers.store,
      keyOfRuntime,
      kubeconfigs: kubeconfigs.store,
      resync: repairRuntime,
      registry: o.registry,
      logger: log,
    });
  }
  const afterRotation = async (): Promise<void> => {
    log.info('CA rotated; re-issuing certificates on every runtime');
    await endpoint?.refresh();
    for (const rb of bootstrappers.store.list())
      reconciler.force(`${rb.metadata.namespace}/${rb.metadata.name}`);
    enqueueAll();
  };
  const rotation = o.caRotation;
  const caUpkeep = rotation
    ? setInterval(() => {
        void cas
          .rotateIfExpiring(rotation.renewBeforeMs, rotation.graceMs)
          .then(async (rotated) => {
            if (rotated) await afterRotation();
          })
          .catch((error: unknown) => {
            log.error({ err: error }, 'CA rotation failed');
          });
      }, rotation.checkEveryMs ?? 3600_000)
    : undefined;
  caUpkeep?.unref();
  let mirror: RuntimeMirror | undefined;
  if (o.autoCreateSelector !== undefined) {
    mirror = await startRuntimeMirror({
      kcp,
      namespace: ns,
      selector: o.autoCreateSelector,
      bootstrappers: bootstrappers.store,
      logger: log,
    });
  }
  log.info(
    { runtimes: bootstrappers.store.list().length, release: o.release.version },
    'direct mode started',
  );

  return {
    reconciler,
    cas,
    driftPort: endpoint?.port,
    async rotateCa(graceMs) {
      await cas.rotate(graceMs);
      await afterRotation();
    },
    resync(runtimeId) {
      const key = keyOfRuntime(runtimeId);
      if (key === undefined) return false;
      reconciler.force(key);
      queue.add(key);
      return true;
    },
    async stop(options = {}) {
      // First, so the runtimes in flight finish and the others take ours at once (released Lease).
      await shard?.stop({ release: options.releaseShard ?? true });
      unsubscribe();
      await rollout?.stop();
      confirmations.stop();
      if (caUpkeep) clearInterval(caUpkeep);
      await endpoint?.stop();
      if (resync) clearInterval(resync);
      clearInterval(gauges);
      if (coalesce) clearTimeout(coalesce);
      await mirror?.stop();
      await repairs.shutDownWithDrain();
      await repairing;
      await queue.shutDownWithDrain();
      await running;
      gate.stop();
      await Promise.all([bootstrappers.stop(), kubeconfigs.stop()]);
      pool.stop();
      kcp.close();
    },
  };
}
