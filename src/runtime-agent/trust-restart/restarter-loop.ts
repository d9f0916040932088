/**
 * The active restarter's loop, for one leadership term: the cache of the Pods carrying our mount,
 * and one keyed work queue (../kube/work-queue.ts) that runs everything ./restart-work.ts
 * names. Keys: `plan` (judge the Pods and admit restarts; queued on every change of the bundle or
 * of those Pods, a burst merged into one run), `scan` (label upstream-stamped Pods), and one key
 * per restart target (its first look, its start, looks while under way: queued when its Pods
 * change, and after `pollMs` or its deadline). The queue's per-key backoff retries failures and
 * evictions a PodDisruptionBudget refused; no timer of its own here.
 */
import type { Logger } from 'pino';
import { CTB_MOUNTED_LABEL, CTB_MOUNTED_VALUE } from '../../api/trust-stamp.js';
import { ItemExponentialBackoff } from '../../kube/backoff.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import type { EventRecorder } from '../../kube/event-recorder.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import { Reflector } from '../../kube/reflector.js';
import { WorkQueue } from '../../kube/work-queue.js';
import type { HandlerResult } from '../../kube/work-queue-options.js';
import { podFactsOf, slimPod, type PodFacts, type SlimPod } from './pod-facts.js';
import type { RestartPacing } from './restart-actions.js';
import type { RestartCalls } from './restart-calls.js';
import type { RestartMetrics } from './restart-metrics.js';
import type { RestartPlan, RestartScope } from './restart-plan.js';
import type { RestartCounts } from './restart-status.js';
import { RestartWork } from './restart-work.js';
import type { KnownBundle, TrustBundleFollower } from './trust-bundle-follower.js';
import { labelUpstreamPods, type ScannedPod } from './upstream-pods.js';

const PLAN = 'plan';
const SCAN = 'scan';
const RETRY_MAX_MS = 60_000;

/** What the active restarter runs with. */
export interface ActiveOptions {
  readonly access: ClusterAccess;
  readonly bundle: TrustBundleFollower;
  readonly log: Logger;
  readonly metrics: RestartMetrics;
  readonly events: EventRecorder;
  readonly pacing: RestartPacing;
  readonly calls: RestartCalls;
  readonly pollMs?: number;
  readonly idleMs?: number;
  readonly retryBaseMs?: number;
  /** Where the restarter holds restart rights (default everywhere). */
  readonly mayRestart?: RestartScope;
  /** Aborted when leadership is lost or the restarter stops. */
  readonly signal: AbortSignal;
  readonly onPlan: (plan: RestartPlan) => void;
  readonly onStatus?: (bundle: KnownBundle, counts: RestartCounts) => void;
}

/** Runs until `signal` aborts; see the file comment. */
export async function runActive(o: ActiveOptions): Promise<void> {
  const pods = new Reflector<SlimPod>({
    name: 'pods with the trust-bundle mount',
    listerWatcher: new KubeListWatch<SlimPod>(o.access, '/api/v1/pods'),
    labelSelector: `${CTB_MOUNTED_LABEL}=${CTB_MOUNTED_VALUE}`,
    transform: slimPod,
    logger: o.log,
  });
  // The facts of each cached Pod object, made once: a plan reads every Pod, and the cache
  // replaces an object on each change, so an entry lives exactly as long as its Pod's version.
  const known = new WeakMap<SlimPod, PodFacts>();
  const factsOf = (pod: SlimPod): PodFacts => {
    let facts = known.get(pod);
    if (facts === undefined) known.set(pod, (facts = podFactsOf(pod)));
    return facts;
  };
  const work = new RestartWork({ ...o, logger: o.log }, (namespace, name) => {
    const pod = pods.store.get(`${namespace}/${name}`);
    return pod === undefined ? undefined : factsOf(pod);
  });
  const queue = new WorkQueue({
    name: 'trust-restarter',
    rateLimiter: new ItemExponentialBackoff({ baseMs: o.retryBaseMs ?? 5_000, maxMs: RETRY_MAX_MS }),
  });
  const changed = (pod: SlimPod, deleted: boolean): void => {
    queue.add(PLAN);
    for (const key of work.keysFor(factsOf(pod), deleted)) queue.add(key);
  };
  pods.addEventHandler({
    onAdd: (p) => {
      changed(p, false);
    },
    onUpdate: (_old, p) => {
      changed(p, false);
    },
    onDelete: (p) => {
      changed(p, true);
    },
  });
  const unsubscribe = o.bundle.onChange(() => {
    queue.add(SCAN);
    queue.add(PLAN);
  });
  const stop = (): void => {
    queue.shutDown();
  };
  o.signal.addEventListener('abort', stop, { once: true });
  pods.start();
  let reported: string | undefined;
  const plan = async (): Promise<HandlerResult> => {
    const idleMs = o.idleMs ?? 60_000;
    const bundle = o.bundle.current();
    if (bundle === undefined) {
      clearCounts(o.metrics);
      return { requeueAfter: idleMs };
    }
    const now = Date.now();
    const since = Number.isNaN(bundle.changedAtMs)
      ? bundle.seenAtMs
      : Math.min(bundle.changedAtMs, bundle.seenAtMs);
    const facts = pods.store.list().map(factsOf);
    // New Pods may get the old content until the delay has passed (kubelet's cache).
    const out = await work.plan(
      { ...bundle, lagMs: o.pacing.delayMs, notBeforeMs: since + o.pacing.delayMs },
      facts,
      now,
    );
    o.onPlan(out.plan);
    const counts = setCounts(o.metrics, out.plan);
    const status = `${bundle.hash}/${counts.stalePods}/${counts.barePods}/${counts.optedOutPods}`;
    if (status !== reported) {
      reported = status;
      o.onStatus?.(bundle, counts);
    }
    for (const key of out.run) queue.add(key);
    return { requeueAfter: Math.min(idleMs, out.replanAfterMs ?? idleMs) };
  };
  const scan = async (signal: AbortSignal): Promise<void> => {
    const bundle = o.bundle.current();
    if (bundle === undefined) return;
    const labelled = await labelUpstreamPods(
      {
        pods: new KubeListWatch<ScannedPod>(o.access, '/api/v1/pods'),
        bundleName: bundle.name,
        label: (namespace, name) => o.calls.labelPod(namespace, name),
      },
      signal,
    );
    if (labelled > 0) o.log.info({ labelled }, 'labelled Pods an upstream install stamped');
  };
  const handler = async (key: string, signal: AbortSignal): Promise<HandlerResult | undefined> => {
    if (key === PLAN) return plan();
    if (key === SCAN) {
      await scan(signal);
      return undefined;
    }
    const out = await work.run(key, Date.now());
    if (out.replan === true) queue.add(PLAN);
    for (const next of out.run ?? []) queue.add(next);
    if (out.retry === true) return { requeue: true };
    return out.lookAfterMs !== undefined ? { requeueAfter: out.lookAfterMs } : undefined;
  };
  let worked: Promise<void> | undefined;
  try {
    await pods.waitForSync(o.signal);
    o.log.info({ pods: pods.store.size }, 'active trust-bundle restarter');
    queue.add(SCAN);
    queue.add(PLAN);
    worked = queue.start((key, ctx) => handler(key, ctx.signal), {
      // The plan, the scan and every restart holding a slot each run on their own.
      concurrency: o.pacing.concurrency + 2,
      onError: (key, err) => {
        o.log.warn({ err, key }, 'trust-restart work failed; retrying with backoff');
      },
    });
    await worked;
  } finally {
    stop();
    o.signal.removeEventListener('abort', stop);
    unsubscribe();
    await worked;
    await pods.stop();
  }
}

function setCounts(m: RestartMetrics, plan: RestartPlan): RestartCounts {
  m.stalePods.reset();
  for (const [namespace, count] of plan.staleByNamespace) m.stalePods.set({ namespace }, count);
  m.barePods.set(plan.bare.length);
  m.optedOutPods.set(plan.optedOut.length);
  return { stalePods: plan.stalePods, barePods: plan.bare.length, optedOutPods: plan.optedOut.length };
}

function clearCounts(m: RestartMetrics): void {
  m.stalePods.reset();
  m.barePods.set(0);
  m.optedOutPods.set(0);
}
