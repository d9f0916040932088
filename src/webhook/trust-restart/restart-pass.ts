/**
 * One pass of the active restarter: plan (pure, ./restart-plan.ts), observe the restarts under
 * way, pace (pure, ./restart-pacer.ts) and act on what may start (./workload-decision.ts decides
 * per workload, as read just before acting). State lives across passes of one leadership term.
 */
import type { Logger } from 'pino';
import { ItemExponentialBackoff } from '../../kube/backoff.js';
import type { EventRecorder } from '../../kube/event-recorder.js';
import type { PodFacts } from './pod-facts.js';
import type { RestartCalls } from './restart-calls.js';
import type { RestartMetrics } from './restart-metrics.js';
import { paceStep, type Rollout } from './restart-pacer.js';
import {
  evictionKey,
  planRestarts,
  replicaSetsToResolve,
  type BundleFacts,
  type ReplicaSetOwner,
  type RestartPlan,
  type RestartTarget,
} from './restart-plan.js';
import { decideWorkload, rolloutComplete } from './workload-decision.js';

/** Pacing settings. */
export interface RestartPacing {
  /** Restarts under way at once (at least 1). */
  readonly concurrency: number;
  /** After a bundle change, before the first restart. */
  readonly delayMs: number;
  /** A restart not completed after this is reported and the next goes on. */
  readonly deadlineMs: number;
}

/** What a pass works with. */
export interface PassContext {
  readonly calls: RestartCalls;
  readonly metrics: RestartMetrics;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly pacing: RestartPacing;
}

/** The bundle in force with when the restarts may begin. */
export interface PassBundle extends BundleFacts {
  /** Epoch ms (local clock) from which restarts may start. */
  readonly notBeforeMs: number;
}

const FOREVER = Number.POSITIVE_INFINITY;

/** The state of one leadership term; {@link pass} runs one round. */
export class RestartPasses {
  private hash: string | undefined;
  private rolling: Rollout[] = [];
  /** Keys left alone for this bundle, until when (epoch ms). */
  private readonly settled = new Map<string, number>();
  private readonly replicaSets = new Map<string, ReplicaSetOwner>();
  private readonly evictionBackoff = new ItemExponentialBackoff<string>({ baseMs: 5_000, maxMs: 60_000 });
  private readonly retryAt = new Map<string, number>();
  /** Bare Pods already reported for this bundle. */
  private readonly reportedBare = new Set<string>();

  constructor(private readonly c: PassContext) {}

  /** Keys of the restarts under way (for tests and logs). */
  underWay(): string[] {
    return this.rolling.map((r) => r.key);
  }

  /** One round over the cached Pods; returns the plan it acted on. */
  async pass(bundle: PassBundle, pods: readonly PodFacts[], nowMs: number): Promise<RestartPlan> {
    if (bundle.hash !== this.hash) {
      // A new bundle: everything is judged anew; restarts under way keep their slots.
      this.hash = bundle.hash;
      this.settled.clear();
      this.replicaSets.clear();
      this.reportedBare.clear();
    }
    for (const { namespace, owner } of replicaSetsToResolve(pods, bundle, this.replicaSets)) {
      const found = await this.c.calls.replicaSetOwner(namespace, owner);
      if (found !== undefined) this.replicaSets.set(`${namespace}/${owner.uid}`, found);
    }
    const plan = planRestarts(bundle, pods, this.replicaSets);
    this.reportBare(plan, nowMs >= bundle.notBeforeMs);
    const completed = await this.observe(pods, nowMs);
    const step = paceStep({
      rolling: this.rolling,
      completed,
      candidates: plan.targets,
      settled: new Set([...this.settled].filter(([, until]) => until > nowMs).map(([k]) => k)),
      nowMs,
      notBeforeMs: bundle.notBeforeMs,
      concurrency: this.c.pacing.concurrency,
    });
    for (const { rollout, outcome } of step.finished) this.finish(rollout, outcome, nowMs);
    this.rolling = [...step.rolling];
    let slots = step.freeSlots;
    for (const target of step.queue) {
      if (slots === 0) break;
      if (await this.start(target, bundle.hash, nowMs)) slots--;
    }
    return plan;
  }

  /** Bare Pods are never touched: each is reported once per bundle, once restarts may begin. */
  private reportBare(plan: RestartPlan, due: boolean): void {
    if (!due) return;
    for (const pod of plan.bare) {
      const key = evictionKey(pod);
      if (this.reportedBare.has(key)) continue;
      this.reportedBare.add(key);
      this.c.logger.warn(
        { target: key },
        'a Pod without an owner runs an older trust bundle; not restarted (recreate it to pick up the new bundle)',
      );
    }
  }

  /** Keys of restarts under way that completed; retries blocked evictions that are due. */
  private async observe(pods: readonly PodFacts[], nowMs: number): Promise<Set<string>> {
    const done = new Set<string>();
    const present = new Map(pods.filter((p) => !p.finished).map((p) => [evictionKey(p), p.uid]));
    for (const r of this.rolling) {
      const t = r.target;
      if (t.kind === 'evict') {
        if (present.get(r.key) !== t.pod.uid) done.add(r.key);
        else if ((this.retryAt.get(r.key) ?? FOREVER) <= nowMs) await this.evict(t.pod, r.key, nowMs);
        continue;
      }
      const w = await this.c.calls.readWorkload(t.workload);
      // Also a rollout for an older bundle is waited for: the newer one patches it afterwards.
      if (w === undefined || rolloutComplete(t.workload.kind, w)) done.add(r.key);
    }
    return done;
  }

  private finish(r: Rollout, outcome: 'completed' | 'deadline', nowMs: number): void {
    const t = r.target;
    this.retryAt.delete(r.key);
    if (outcome === 'completed') {
      // Not settled: the next pass reads the workload again and finds it current (or, after a
      // newer bundle, patches it once more).
      this.evictionBackoff.forget(r.key);
      return;
    }
    const kind = t.kind === 'workload' ? t.workload.kind : 'Pod';
    this.c.metrics.pastDeadline.inc({ kind });
    this.c.logger.warn(
      { target: r.key, waitedMs: nowMs - r.startedAtMs },
      'restart not completed by its deadline; going on with the next',
    );
    // A workload is never patched twice for one bundle; a Pod is tried again after the others.
    if (r.hash === this.hash)
      this.settled.set(r.key, t.kind === 'workload' ? FOREVER : nowMs + this.c.pacing.deadlineMs);
  }

  /** Starts a restart of `target` if it needs one; true when it takes a slot. */
  private async start(target: RestartTarget, hash: string, nowMs: number): Promise<boolean> {
    const rollout = (): Rollout => ({
      key: target.key,
      target,
      hash,
      startedAtMs: nowMs,
      deadlineAtMs: nowMs + this.c.pacing.deadlineMs,
    });
    if (target.kind === 'evict') {
      const result = await this.evict(target.pod, target.key, nowMs);
      if (result === 'gone') return false;
      this.rolling.push(rollout());
      return true;
    }
    const { workload } = target;
    const w = await this.c.calls.readWorkload(workload);
    if (w === undefined) return false;
    const action = decideWorkload(workload.kind, w, hash);
    if (action === 'opted-out') {
      this.settled.set(target.key, FOREVER);
      this.c.logger.info({ target: target.key }, 'owner opted out of restarts on trust change');
      return false;
    }
    if (action === 'evict') {
      // OnDelete: the template alone restarts nothing; its Pods are evicted one by one.
      const pod = target.pods[0];
      if (pod === undefined) return false;
      return this.start({ kind: 'evict', key: evictionKey(pod), pod }, hash, nowMs);
    }
    if (action === 'rolling') {
      // Patched before (by this replica or an earlier leader): waited for, never patched again.
      if (rolloutComplete(workload.kind, w)) {
        this.settled.set(target.key, FOREVER);
        this.c.logger.warn(
          { target: target.key, stalePods: target.pods.length },
          'rolled out for this bundle, yet Pods still carry an older stamp; left alone',
        );
        return false;
      }
      this.rolling.push(rollout());
      return true;
    }
    await this.c.calls.annotateTemplate(workload, hash);
    this.c.metrics.ownersRestarted.inc({ kind: workload.kind });
    this.c.logger.info(
      { target: target.key, stalePods: target.pods.length },
      'restarting for the new trust bundle',
    );
    this.c.events.record({
      regarding: {
        apiVersion: 'apps/v1',
        kind: workload.kind,
        name: workload.name,
        namespace: workload.namespace,
        ...(w.metadata?.uid !== undefined ? { uid: w.metadata.uid } : {}),
      },
      type: 'Normal',
      reason: 'TrustBundleChanged',
      action: 'Restart',
      note: `${target.pods.length} Pod(s) run an older trust bundle; restarting through the Pod template (bundle ${hash.slice(0, 12)})`,
    });
    this.rolling.push(rollout());
    return true;
  }

  private async evict(pod: PodFacts, key: string, nowMs: number): Promise<'evicted' | 'blocked' | 'gone'> {
    const result = await this.c.calls.evict(pod.namespace, pod.name);
    if (result === 'blocked') {
      this.c.metrics.evictionsBlocked.inc();
      this.retryAt.set(key, nowMs + this.evictionBackoff.when(key));
      this.c.logger.warn({ target: key }, 'eviction refused by a PodDisruptionBudget; retrying with backoff');
    } else {
      this.retryAt.delete(key);
      if (result === 'evicted') {
        this.c.metrics.evictions.inc();
        this.c.events.record({
          regarding: {
            apiVersion: 'v1',
            kind: 'Pod',
            name: pod.name,
            namespace: pod.namespace,
            uid: pod.uid,
          },
          type: 'Normal',
          reason: 'TrustBundleChanged',
          action: 'Evict',
          note: `the Pod runs an older trust bundle and its owner cannot roll it; evicted (bundle ${this.hash?.slice(0, 12) ?? ''})`,
        });
      }
    }
    return result;
  }
}
