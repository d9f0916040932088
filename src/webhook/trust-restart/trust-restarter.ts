/**
 * The trust-bundle restarter (docs/trust-restart.md): one active per runtime, elected by a Lease
 * among the webhook's replicas (../../kube/leader-election.ts). While active it watches the Pods
 * that carry our mount (label selector: its cache never holds other Pods, and standbys hold
 * none), and runs a pass (./restart-pass.ts) on every change of the bundle or of those Pods, and
 * every poll interval while restarts are under way.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { CTB_MOUNTED_LABEL, CTB_MOUNTED_VALUE, RESTARTER_LEASE } from '../../api/trust-stamp.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { createEventRecorder, type EventRecorder } from '../../kube/event-recorder.js';
import { LeaderElector, type LeaderElectionTiming } from '../../kube/leader-election.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import { Reflector } from '../../kube/reflector.js';
import { podFactsOf, slimPod, type SlimPod } from './pod-facts.js';
import { countedCalls, restartCalls, type RestartCalls } from './restart-calls.js';
import { createRestartMetrics, type RestartMetrics } from './restart-metrics.js';
import { RestartPasses, type RestartPacing } from './restart-pass.js';
import type { RestartPlan } from './restart-plan.js';
import type { KnownBundle, TrustBundleFollower } from './trust-bundle-follower.js';

/** Defaults of the pacing flags (docs/trust-restart.md says why). */
export const DEFAULT_RESTART_PACING: RestartPacing = {
  concurrency: 1,
  // kubelet (1.34) serves a signer-linked bundle read by name from a cache that the bundle's
  // update does not clear, for 5 minutes: a Pod restarted earlier may start with the old file.
  delayMs: 6 * 60_000,
  deadlineMs: 10 * 60_000,
};

const MIN_PASS_GAP_MS = 250;

/** Settings of {@link startTrustRestarter}. */
export interface TrustRestarterOptions {
  readonly access: ClusterAccess;
  readonly bundle: TrustBundleFollower;
  /** Namespace of the Lease (the webhook's). */
  readonly namespace: string;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly pacing?: Partial<RestartPacing>;
  /** Pass at least this often while restarts are under way (default 2 s). */
  readonly pollMs?: number;
  /** Pass at least this often when nothing is to do (default 60 s; changes wake it at once). */
  readonly idleMs?: number;
  readonly leaseName?: string;
  readonly leaseTiming?: Partial<LeaderElectionTiming>;
  readonly identity?: string;
  /** Told the count of Pods on an old bundle after every pass that changed it (the KCP status). */
  readonly onStatus?: (bundle: KnownBundle, oldBundlePods: number) => void;
  /** Replaces the API calls (tests). */
  readonly calls?: RestartCalls;
  readonly events?: EventRecorder;
}

/** A running restarter (a candidate; active while it holds the Lease). */
export interface TrustRestarter {
  isActive(): boolean;
  /** The last plan the active restarter acted on (tests, debugging). */
  lastPlan(): RestartPlan | undefined;
  /** How many passes this replica ran (tests: "after a few more passes, still nothing"). */
  passes(): number;
  stop(): Promise<void>;
}

/** Starts competing for the Lease; see the file comment. */
export function startTrustRestarter(o: TrustRestarterOptions): TrustRestarter {
  const log = o.logger.child({ part: 'trust-restarter' });
  const identity = o.identity ?? `${process.env.POD_NAME ?? hostname()}_${randomUUID()}`;
  const metrics = createRestartMetrics(o.registry);
  const pacing = { ...DEFAULT_RESTART_PACING, ...o.pacing };
  const events =
    o.events ??
    createEventRecorder({
      kubeConfig: o.access,
      namespace: o.namespace,
      reportingController: 'rt-bootstrapper.kyma-project.io/trust-restarter',
      reportingInstance: identity.slice(0, 128),
      logger: log,
    });
  const elector = new LeaderElector({
    kubeConfig: o.access,
    namespace: o.namespace,
    name: o.leaseName ?? RESTARTER_LEASE,
    identity,
    ...(o.leaseTiming ? { timing: o.leaseTiming } : {}),
    logger: log,
    onStatus: (leading) => {
      metrics.active.set(leading ? 1 : 0);
    },
  });
  let plan: RestartPlan | undefined;
  let passes = 0;
  elector.start({
    onStartedLeading: async (signal) => {
      await runActive({
        ...o,
        log,
        metrics,
        events,
        pacing,
        calls: countedCalls(o.calls ?? restartCalls(o.access), (call) => {
          metrics.requests.inc({ call });
        }),
        signal,
        onPlan: (p) => {
          plan = p;
          passes++;
        },
      });
    },
    onStoppedLeading: () => {
      log.info('no longer the active trust-bundle restarter');
    },
  });
  return {
    isActive: () => elector.isLeader(),
    lastPlan: () => plan,
    passes: () => passes,
    async stop() {
      await elector.stop();
      await events.flush();
    },
  };
}

interface ActiveOptions extends TrustRestarterOptions {
  readonly log: Logger;
  readonly metrics: RestartMetrics;
  readonly events: EventRecorder;
  readonly pacing: RestartPacing;
  readonly calls: RestartCalls;
  readonly signal: AbortSignal;
  readonly onPlan: (plan: RestartPlan) => void;
}

/** The active restarter's loop, until `signal` aborts (leadership lost or stop). */
async function runActive(o: ActiveOptions): Promise<void> {
  const pods = new Reflector<SlimPod>({
    name: 'pods with the trust-bundle mount',
    listerWatcher: new KubeListWatch<SlimPod>(o.access, '/api/v1/pods'),
    labelSelector: `${CTB_MOUNTED_LABEL}=${CTB_MOUNTED_VALUE}`,
    transform: slimPod,
    logger: o.log,
  });
  let wake: (() => void) | undefined;
  const poke = (): void => {
    wake?.();
  };
  pods.addEventHandler({ onAdd: poke, onUpdate: poke, onDelete: poke });
  const unsubscribe = o.bundle.onChange(poke);
  pods.start();
  const passes = new RestartPasses(o);
  let reported: string | undefined;
  try {
    await pods.waitForSync(o.signal);
    o.log.info({ pods: pods.store.size }, 'active trust-bundle restarter');
    while (!o.signal.aborted) {
      const woken = new Promise<void>((resolve) => (wake = resolve));
      const bundle = o.bundle.current();
      let waitMs = o.pollMs ?? 2_000;
      if (bundle === undefined) {
        clearCounts(o.metrics);
        waitMs = o.idleMs ?? 60_000;
      } else {
        const now = Date.now();
        const since = Number.isNaN(bundle.changedAtMs)
          ? bundle.seenAtMs
          : Math.min(bundle.changedAtMs, bundle.seenAtMs);
        const notBeforeMs = since + o.pacing.delayMs;
        try {
          const facts = pods.store.list().map(podFactsOf);
          // New Pods may get the old content until the delay has passed (kubelet's cache).
          const plan = await passes.pass({ ...bundle, lagMs: o.pacing.delayMs, notBeforeMs }, facts, now);
          o.onPlan(plan);
          setCounts(o.metrics, plan);
          const status = `${bundle.hash}/${plan.oldBundlePods}`;
          if (status !== reported) {
            reported = status;
            o.onStatus?.(bundle, plan.oldBundlePods);
          }
          const idle = passes.underWay().length === 0 && plan.targets.length === 0;
          if (idle) waitMs = o.idleMs ?? 60_000;
          else if (now < notBeforeMs) waitMs = Math.min(waitMs, notBeforeMs - now);
        } catch (err) {
          o.log.warn({ err }, 'restart pass failed; trying again');
        }
      }
      await Promise.race([woken, delay(waitMs, undefined, { signal: o.signal }).catch(() => undefined)]);
      // Pod events come in bursts during a rollout: one pass for the burst.
      await delay(MIN_PASS_GAP_MS, undefined, { signal: o.signal }).catch(() => undefined);
    }
  } finally {
    unsubscribe();
    await pods.stop();
  }
}

function setCounts(m: RestartMetrics, plan: RestartPlan): void {
  m.stalePods.reset();
  for (const [namespace, count] of plan.staleByNamespace) m.stalePods.set({ namespace }, count);
  m.barePods.set(plan.bare.length);
  m.optedOutPods.set(plan.optedOut.length);
}

function clearCounts(m: RestartMetrics): void {
  m.stalePods.reset();
  m.barePods.set(0);
  m.optedOutPods.set(0);
}
