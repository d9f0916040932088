/**
 * The trust-bundle restarter (docs/trust-restart.md): one active per runtime, elected by a Lease
 * among the webhook's replicas (../kube/leader-election.ts). While active it watches the Pods
 * that carry our mount (label selector: its cache never holds other Pods, and standbys hold
 * none) and works through one keyed work queue (./restarter-loop.ts): a plan on every change of
 * the bundle or of those Pods, a look at a restart under way when its Pods change, and a scan that
 * labels upstream-stamped Pods (./upstream-pods.ts) on becoming active and on every bundle change.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { RESTARTER_LEASE } from '../../api/trust-stamp.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { createEventRecorder, type EventRecorder } from '../../kube/event-recorder.js';
import { KeepAliveAccess } from '../../kube/keep-alive-access.js';
import { LeaderElector } from '../../kube/leader-election.js';
import { type LeaderElectionTiming } from '../../kube/leader-election-timing.js';
import { countedCalls, restartCalls, type RestartCalls } from './restart-calls.js';
import type { RestartPacing } from './restart-actions.js';
import { createRestartMetrics } from './restart-metrics.js';
import type { RestartPlan, RestartScope } from './restart-plan.js';
import type { RestartCounts } from './restart-status.js';
import { runActive } from './restarter-loop.js';
import type { KnownBundle, TrustBundleFollower } from './trust-bundle-follower.js';

/** Defaults of the pacing flags (docs/trust-restart.md says why). */
export const DEFAULT_RESTART_PACING: RestartPacing = {
  concurrency: 1,
  // kubelet (1.34) serves a signer-linked bundle read by name from a cache that the bundle's
  // update does not clear, for 5 minutes: a Pod restarted earlier may start with the old file.
  delayMs: 6 * 60_000,
  deadlineMs: 10 * 60_000,
};

/** Settings of {@link startTrustRestarter}. */
export interface TrustRestarterOptions {
  readonly access: ClusterAccess;
  readonly bundle: TrustBundleFollower;
  /** Namespace of the Lease (the webhook's). */
  readonly namespace: string;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly pacing?: Partial<RestartPacing>;
  /** Look at a restart under way at least this often (default 2 s; its Pods' changes look at once). */
  readonly pollMs?: number;
  /** Where the restarter holds restart rights (default everywhere; `--restart-namespaces`). */
  readonly mayRestart?: RestartScope;
  /** Plan at least this often (default 60 s; changes plan at once). */
  readonly idleMs?: number;
  /** First delay of a retry (a failed request, an eviction refused), doubling to 60 s (default 5 s). */
  readonly retryBaseMs?: number;
  readonly leaseName?: string;
  readonly leaseTiming?: Partial<LeaderElectionTiming>;
  readonly identity?: string;
  /** Told the counts after every plan that changed them (the KCP status). */
  readonly onStatus?: (bundle: KnownBundle, counts: RestartCounts) => void;
  /** Replaces the API calls (tests). */
  readonly calls?: RestartCalls;
  readonly events?: EventRecorder;
}

/** A running restarter (a candidate; active while it holds the Lease). */
export interface TrustRestarter {
  isActive(): boolean;
  /** The last plan the active restarter acted on (tests, debugging). */
  lastPlan(): RestartPlan | undefined;
  /** How many plans this replica made (tests: "after a few more plans, still nothing"). */
  passes(): number;
  stop(): Promise<void>;
}

/** Starts competing for the Lease; see the file comment. */
export function startTrustRestarter(o: TrustRestarterOptions): TrustRestarter {
  const log = o.logger.child({ part: 'trust-restarter' });
  const identity = o.identity ?? `${process.env.POD_NAME ?? hostname()}_${randomUUID()}`;
  const metrics = createRestartMetrics(o.registry);
  const pacing = { ...DEFAULT_RESTART_PACING, ...o.pacing };
  // The restarter's requests (reads, patches, evictions, labels, Events) reuse their connections:
  // a TLS handshake each would cost more than the request, hundreds of times per bundle change.
  const access = new KeepAliveAccess(o.access);
  const events =
    o.events ??
    createEventRecorder({
      kubeConfig: access,
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
    timing: o.leaseTiming,
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
        access,
        calls: countedCalls(o.calls ?? restartCalls(access), (call) => {
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
      access.close();
    },
  };
}
