import { admissionPathOf } from './admission-policy-plan.js';
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
import { RuntimeMirror } from './runtime-mirror.js';
import { RolloutWatches } from './rollout-watch.js';
import { DriftEndpoint } from './drift-endpoint.js';
import { attestIntervalSeconds, PeriodicResync } from './periodic-resync.js';
import { AttestationBook } from './attestation-book.js';
import { RepairLatency } from './repair-latency.js';
import { part, partOf, PartGroup } from '../../process/part-group.js';
import { ShardedWork } from './sharded-work.js';
import { SourceFanout } from './source-fanout.js';
import { attachFleetExpiryMetrics, type FleetRuntime } from '../expiry/fleet-expiry.js';
import type { ModeContext, ModeHandle } from '../mode.js';

/**
 * Connections to the KCP at once: its watches (a handful, each holding one) and the status writes
 * and finalizers of a fan-out (a few ms each on the KCP: 32 carry thousands a second).
 */
const KCP_MAX_SOCKETS = 32;

/**
 * Direct mode: every RuntimeBootstrapper's runtime gets the webhook and the current source set
 * written directly. Fan-out is a keyed queue with bounded concurrency and per-runtime backoff,
 * so one slow or failing runtime never holds the others back. Built by {@link assembleDirectMode},
 * then started as one group of parts (src/process/part-group.ts).
 */
export async function startDirectMode(o: DirectModeOptions): Promise<DirectMode> {
  const { parts, mode } = assembleDirectMode(o);
  await parts.start();
  return mode;
}

/**
 * Builds direct mode's parts, each after the parts it uses, and the handle; starts nothing (the
 * group's {@link PartGroup.plan} shows the order without I/O). The parts: the caches
 * (direct-caches.ts), the source set (source-fanout.ts), the rollout, the reconciler and its
 * queue, the periodic resync (periodic-resync.ts), drift repairs (drift-repairs.ts), the drift
 * listener (drift-endpoint.ts), the CA (ca-upkeep.ts), the Runtime mirror (runtime-mirror.ts)
 * and sharding across replicas (sharded-work.ts). Where one part tells another of events, the
 * one built first publishes ({@link Listeners}) and the later one registers as it is built; the
 * values both read (the attestations, the repair latency) are made before both.
 */
export function assembleDirectMode(o: DirectModeOptions): { parts: PartGroup; mode: DirectMode } {
  const s = resolveDirectModeSettings(o);
  validateServingPolicy(s.servingPolicy);
  const ns = o.namespace;
  const log = o.logger.child({ mode: 'direct' });
  const metrics = createDirectMetrics(o.registry);
  const parts = new PartGroup('direct mode', log);

  // Keep-alive to the KCP: status writes, finalizers and watches reuse connections, at most
  // KCP_MAX_SOCKETS of them (a fan-out's status writes queue for one rather than open hundreds).
  const kcp = new KeepAliveAccess(o.kubeConfig, { maxSockets: KCP_MAX_SOCKETS });
  const kcpPart = parts.add(
    part('KCP connections', {
      stop: () => {
        kcp.close();
      },
    }),
  );
  const cas =
    o.caStore ?? new CaStore(o.kubeConfig.makeApiClient(CoreV1Api), { namespace: ns, name: s.caSecretName });
  const caPart = parts.add(
    part('CA', {
      start: async () => {
        // A store given is loaded by its owner (shared with a drift listener elsewhere).
        if (!o.caStore) await cas.load();
      },
    }),
  );
  // The turns of the event loop, shared by the reconciles' starts and the runtimes' answers.
  const pacer = new LoopPacer();
  // Every call to a runtime bounded: the cap on an answer, the deadline of a call, and the stop.
  const pool = new RuntimeClientPool({
    limits: { deadlineMs: s.runtimeDeadlineMs },
    pace: () => pacer.resume(),
  });
  const poolPart = parts.add(partOf('runtime clients', pool));
  // Fewer reconciles at once while the event loop runs late (CPU-bound) or the KCP answers 429:
  // drift repairs (their own queue, not gated), probes and lease renewals keep getting through
  // during a fan-out.
  const gate = new LoopLagGate({ max: s.concurrency, pacer });
  const gatePart = parts.add(partOf('admission gate', gate));

  const caches = new DirectCaches({
    kcp,
    namespace: ns,
    kubeconfigSelector: s.kubeconfigSelector,
    logger: log,
  });
  const cachesPart = parts.add(partOf('caches', caches, [kcpPart]));
  // Across replicas (sharding on): only this replica's share of the runtimes is worked here.
  // Built before the queue, which admits only what the shard says is ours.
  const shard = s.shard
    ? new ShardedWork({
        kubeConfig: o.kubeConfig,
        kcp,
        namespace: ns,
        logger: log,
        registry: o.registry,
        settings: s.shard,
        bootstrappers: caches.bootstrappers,
      })
    : undefined;
  const sharded = <T>(key: string, work: (fence: LeaseFence) => Promise<T>): Promise<T | undefined> =>
    shard ? shard.run(key, work) : work(UNFENCED);
  const queue = new WorkQueue({
    name: 'runtimebootstrapper',
    metrics: new PrometheusWorkQueueMetrics(o.registry),
    reconcileMetrics: new PrometheusReconcileMetrics(o.registry),
    admit: shard ? (key) => shard.admits(key) : undefined,
  });
  const enqueue = (key: string): void => {
    queue.add(key);
  };
  const enqueueAll = (): void => {
    for (const key of caches.keys()) queue.add(key);
  };
  caches.on.reconcile.add(enqueue);
  shard?.requeue.add(enqueue);

  const rollout = s.rollout
    ? new RolloutCoordinator({
        kcp,
        policyName: s.rollout.policyName,
        bootstrappers: caches.bootstrappers,
        sources: () => o.sources.snapshot(),
        release: s.release,
        revisions: new RevisionStore(kcp, ns),
        autoRollback: s.rollout.autoRollback,
        workloadWatchMs: s.workloadWatchMs,
        metrics: createRolloutMetrics(o.registry),
        logger: log.child({ part: 'rollout' }),
        queueMetrics: new PrometheusWorkQueueMetrics(o.registry),
        enqueue,
        events: o.events,
      })
    : undefined;
  if (rollout) {
    // A status moved, or one runtime fewer: the rollout may advance (or halt), its wave be complete.
    caches.on.changed.add(() => {
      rollout.poke();
    });
    caches.on.removed.add(() => {
      rollout.poke();
    });
  }
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
  // After the caches listed: the set as the sources are then.
  const sourcesPart = parts.add(partOf('source set', sources, [cachesPart]));
  // The rollout's first pass before any reconcile: no runtime gets a revision its wave has not reached.
  const rolloutPart = parts.add(partOf('rollout', rollout, [cachesPart, sourcesPart]));

  // A rollout under way wakes its runtime's pass when it moves (one watch per runtime, bounded).
  const rolloutWatches = new RolloutWatches({ wake: enqueue, logger: log });
  const watchesPart = parts.add(partOf('rollout watches', rolloutWatches, [poolPart]));
  // Read by the reconciler and the periodic resync, the drift repairs and the reconciler: made before both.
  const attestations = new AttestationBook(attestIntervalSeconds(s.resyncMs));
  const repairLatency = new RepairLatency(o.registry);
  const reconciler = new BootstrapperReconciler({
    settings: s,
    kcp,
    attestations,
    bootstrappers: caches.bootstrappers,
    identityOf: (rb) => caches.identityOf(rb),
    rolloutWatches,
    kubeconfigSecrets: caches.kubeconfigs,
    pool,
    cas,
    currentSet: () => sources.current(),
    metrics,
    logger: log,
    rollout,
    // A full reconcile re-applies the set too: it ends the drift repairs' measurement of its runtime.
    onReconciled: (key, ok) => {
      repairLatency.repaired(key, ok);
    },
    kcpThrottled: () => {
      gate.throttled();
    },
  });
  const force = (key: string): void => {
    reconciler.force(key);
    queue.add(key);
  };
  const forceAll = (): void => {
    for (const key of caches.keys()) reconciler.force(key);
    enqueueAll();
  };
  let running: Promise<void> | undefined;
  const queuePart = parts.add(
    part('reconciles', {
      needs: [caPart, poolPart, gatePart, cachesPart, sourcesPart, rolloutPart, watchesPart],
      start: () => {
        running = queue.start((key) => sharded(key, (fence) => reconciler.reconcile(key, fence)), {
          concurrency: s.concurrency,
          gate,
        });
        enqueueAll();
      },
      stop: async () => {
        await queue.shutDownWithDrain();
        await running;
      },
    }),
  );

  const periodic = new PeriodicResync({
    periodMs: s.resyncMs,
    fullEvery: s.fullResyncEvery,
    keys: () => caches.keys(),
    keyOfRuntime: (runtimeId) => caches.keyOfRuntime(runtimeId),
    works: (key) => shard?.admits(key) ?? true,
    force,
    book: attestations,
    registry: o.registry,
    logger: log,
  });
  const periodicPart = parts.add(partOf('periodic resync', periodic, [queuePart]));
  let gauges: NodeJS.Timeout | undefined;
  const gaugesPart = parts.add(
    part('state gauges', {
      needs: [cachesPart, poolPart, gatePart],
      start: () => {
        gauges = setInterval(() => {
          refreshStateGauges(
            metrics,
            caches.bootstrappers.list().map((rb) => rb.status),
          );
          metrics.runtimeClients.set(pool.size);
          metrics.admittedReconciles.set(gate.limit);
        }, 2_000);
        gauges.unref();
      },
      stop: () => {
        clearInterval(gauges);
      },
    }),
  );
  const drift = new DriftRepairs({
    reconciler,
    queue,
    keyOfRuntime: (runtimeId) => caches.keyOfRuntime(runtimeId),
    run: sharded,
    shard,
    registry: o.registry,
    latency: repairLatency,
    concurrency: s.concurrency,
    confirmDelayMs: s.driftConfirmDelayMs,
  });
  // A drift report another replica received for a runtime we work.
  caches.on.changed.add((old, rb) => {
    if (old) drift.updated(old, rb);
  });
  const driftPart = parts.add(partOf('drift repairs', drift, [queuePart]));

  // The parts that serve runtimes or follow the CA: started once the fan-out runs.
  const endpoint = s.driftListener
    ? new DriftEndpoint({
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
  const endpointPart = parts.add(
    partOf('drift listener', endpoint, [caPart, cachesPart, driftPart, periodicPart]),
  );
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
  parts.add(partOf('CA upkeep', caUpkeep, [caPart, endpointPart, queuePart]));
  let detachExpiry: (() => void) | undefined;
  const expiryPart = parts.add(
    part('expiry metrics', {
      needs: [caPart, cachesPart, endpointPart],
      start: () => {
        detachExpiry = attachFleetExpiryMetrics(
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
                  admissionPath: admissionPathOf(rb.status),
                };
              }
            },
          },
          { perRuntime: s.perRuntimeMetrics },
        );
      },
      stop: () => {
        detachExpiry?.();
      },
    }),
  );
  const mirror =
    s.autoCreateSelector !== undefined
      ? new RuntimeMirror({
          kcp,
          namespace: ns,
          selector: s.autoCreateSelector,
          bootstrappers: caches.bootstrappers,
          logger: log,
          shard,
        })
      : undefined;
  const mirrorPart = parts.add(partOf('runtime mirror', mirror, [cachesPart]));
  // Joined last, so left first on stop: the runtimes in flight finish and the other replicas take
  // ours at once (a released Lease) while the rest stops. Until it joins, nothing is ours to work:
  // the queue admits nothing and each part that works through it does nothing.
  let releaseShard = true;
  parts.add(
    part('shard', {
      needs: [queuePart, periodicPart, driftPart, endpointPart, expiryPart, mirrorPart, gaugesPart],
      start: () => shard?.start(),
      stop: () => shard?.stop({ release: releaseShard }),
    }),
  );
  parts.add(
    part('started', {
      start: () => {
        log.info(
          { runtimes: caches.bootstrappers.list().length, release: s.release.version },
          'direct mode started',
        );
      },
    }),
  );

  const mode: DirectMode = {
    cas,
    get driftPort() {
      return endpoint?.port;
    },
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
      releaseShard = options.releaseShard ?? true;
      // Reconciles and repairs in flight get a while to finish; then their calls to runtimes are
      // abandoned, so no runtime (silent, dripping) holds the stop past the Pod's grace period.
      const abandon = setTimeout(() => {
        log.warn({ afterMs: s.stopDrainMs }, 'stopping: abandoning the calls to runtimes still in flight');
        pool.abortCalls();
      }, s.stopDrainMs);
      try {
        await parts.stop();
      } finally {
        clearTimeout(abandon);
      }
    },
  };
  return { parts, mode };
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
      events: ctx.events,
      ...settings,
      concurrency: ctx.options.concurrency,
      resyncMs: ctx.options.resyncMs,
      coalesceMs: ctx.options.coalesceMs,
    });
    return { stop: () => mode.stop() };
  };
}
