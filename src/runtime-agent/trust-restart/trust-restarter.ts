/**
 * The trust-bundle restarter (docs/trust-restart.md): one active per runtime, the runtime agent's
 * leader (../runtime-agent.ts). While active it watches the Pods that carry our mount (label
 * selector: its cache never holds other Pods, and standbys hold none) and works through one keyed
 * work queue (./restarter-loop.ts): a plan on every change of the bundle or of those Pods, a look
 * at a restart under way when its Pods change, and a scan that labels upstream-stamped Pods
 * (./upstream-pods.ts) on becoming active and on every bundle change.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { createEventRecorder, type EventRecorder } from '../../kube/event-recorder.js';
import { KeepAliveAccess } from '../../kube/keep-alive-access.js';
import type { Part } from '../../process/part-group.js';
import { countedCalls, restartCalls, type RestartCalls } from './restart-calls.js';
import type { RestartPacing } from './restart-actions.js';
import { createRestartMetrics, type RestartMetrics } from './restart-metrics.js';
import type { RestartPlan, RestartScope } from './restart-plan.js';
import type { StatusReporter } from './restart-status.js';
import { runActive } from './restarter-loop.js';
import type { TrustBundleFollower } from './trust-bundle-follower.js';

/** Defaults of the pacing flags (docs/trust-restart.md says why). */
export const DEFAULT_RESTART_PACING: RestartPacing = {
  concurrency: 1,
  // kubelet (1.34) serves a signer-linked bundle read by name from a cache that the bundle's
  // update does not clear, for 5 minutes: a Pod restarted earlier may start with the old file.
  delayMs: 6 * 60_000,
  deadlineMs: 10 * 60_000,
};

/** Settings of a {@link TrustRestarter}. */
export interface TrustRestarterOptions {
  readonly access: ClusterAccess;
  readonly bundle: TrustBundleFollower;
  /** Namespace of its Events (the webhook's). */
  readonly namespace: string;
  /** Names the replica in its Events. */
  readonly identity: string;
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
  /** Told the counts after every plan that changed them (the KCP status); stopped with each term. */
  readonly status?: StatusReporter;
  /** Replaces the API calls (tests). */
  readonly calls?: RestartCalls;
  readonly events?: EventRecorder;
}

/**
 * The restarter of one process: what it knows across leadership terms (its metrics, the last
 * plan), and {@link leaderPart}, its work for one term of the agent's leadership.
 */
export class TrustRestarter {
  private readonly log: Logger;
  private readonly metrics: RestartMetrics;
  private readonly pacing: RestartPacing;
  private plan: RestartPlan | undefined;
  private planCount = 0;
  private running = 0;

  constructor(private readonly o: TrustRestarterOptions) {
    this.log = o.logger.child({ part: 'trust-restarter' });
    this.metrics = createRestartMetrics(o.registry);
    this.metrics.active.set(0);
    this.pacing = { ...DEFAULT_RESTART_PACING, ...o.pacing };
  }

  /** Whether this replica restarts now (its part runs: the agent leads). */
  isActive(): boolean {
    return this.running > 0;
  }

  /** The last plan the active restarter acted on (tests, debugging). */
  lastPlan(): RestartPlan | undefined {
    return this.plan;
  }

  /** How many plans this replica made (tests: "after a few more plans, still nothing"). */
  passes(): number {
    return this.planCount;
  }

  /** The restarter's work for one term: started when the agent starts leading, stopped when it stops. */
  readonly leaderPart = (): Part => {
    const lifetime = new AbortController();
    // The restarter's requests (reads, patches, evictions, labels, Events) reuse their connections:
    // a TLS handshake each would cost more than the request, hundreds of times per bundle change.
    const access = new KeepAliveAccess(this.o.access);
    const events =
      this.o.events ??
      createEventRecorder({
        kubeConfig: access,
        namespace: this.o.namespace,
        reportingController: 'rt-bootstrapper.kyma-project.io/trust-restarter',
        reportingInstance: this.o.identity.slice(0, 128),
        logger: this.log,
      });
    let work: Promise<void> = Promise.resolve();
    return {
      name: 'trust-restarter',
      start: () => {
        this.running++;
        this.metrics.active.set(1);
        work = runActive({
          ...this.o,
          log: this.log,
          metrics: this.metrics,
          events,
          pacing: this.pacing,
          access,
          calls: countedCalls(this.o.calls ?? restartCalls(access), (call) => {
            this.metrics.requests.inc({ call });
          }),
          signal: lifetime.signal,
          onStatus: (bundle, counts) => {
            this.o.status?.report(bundle.hash, counts);
          },
          onPlan: (p) => {
            this.plan = p;
            this.planCount++;
          },
        }).catch((err: unknown) => {
          this.log.error({ err }, 'the trust-bundle restarter stopped on an error');
        });
      },
      stop: async () => {
        lifetime.abort();
        await work;
        this.running--;
        this.metrics.active.set(this.running > 0 ? 1 : 0);
        this.o.status?.stop();
        this.log.info('no longer the active trust-bundle restarter');
        await events.flush();
        access.close();
      },
    };
  };
}
