/**
 * The active restarter's work during one leadership term (state across runs). `plan` judges the
 * cached Pods (pure, ./restart-plan.ts), lets targets take the free slots (pure,
 * ./restart-pacer.ts) and names the keys to run; `run` works one key: the first look at a
 * workload with stale Pods (its opt-out and state, once per bundle), the start of an admitted
 * restart (./workload-decision.ts decides, ./restart-actions.ts writes), or a look at one under
 * way. The caller's work queue runs the keys (one run per key at a time, repeats merged, per-key
 * backoff) and says when; nothing here sleeps or keeps a timer.
 */
import { statusCodeOf } from '../../kube/kube-errors.js';
import type { PodFacts } from './pod-facts.js';
import {
  evictPod,
  reportBare,
  reportWithoutRights,
  resolveReplicaSets,
  restartWorkload,
  type WorkContext,
} from './restart-actions.js';
import { admit, nextLookMs, replanAfter, slotState, type Slot } from './restart-pacer.js';
import {
  evictionKey,
  planRestarts,
  replicaSetsToResolve,
  restartKeyOf,
  type BundleFacts,
  type ReplicaSetOwner,
  type RestartPlan,
  type RestartTarget,
} from './restart-plan.js';
import { decideWorkload, rolloutComplete, type WorkloadAction } from './workload-decision.js';

/** The bundle in force with when the restarts may begin. */
export interface PassBundle extends BundleFacts {
  /** Epoch ms (local clock) from which restarts may start. */
  readonly notBeforeMs: number;
}

/** What a plan asks of the caller. */
export interface PlanOutcome {
  readonly plan: RestartPlan;
  /** Keys to run now: restarts admitted to a slot, then first looks at workloads. */
  readonly run: readonly string[];
  /** Plan again after this long at the latest (the delay's end, a rest's end). */
  readonly replanAfterMs?: number;
}

/** What a run asks of the caller. */
export interface RunOutcome {
  /** Run the key again after this long (a restart under way). */
  readonly lookAfterMs?: number;
  /** Run the key again after its backoff (an eviction a PodDisruptionBudget refused). */
  readonly retry?: boolean;
  /** Plan again now (a slot was let go, or an owner opted out). */
  readonly replan?: boolean;
  /** Run these keys too (an OnDelete workload's Pod to evict). */
  readonly run?: readonly string[];
}

/** What the first read of a workload said, kept until its restart starts (once per bundle). */
interface FirstLook {
  readonly action: WorkloadAction;
  readonly uid: string | undefined;
  readonly complete: boolean;
}

const FOREVER = Number.POSITIVE_INFINITY;
const DEFAULT_POLL_MS = 2_000;

/** The state of one leadership term; see the file comment. */
export class RestartWork {
  private hash: string | undefined;
  /** Restarts holding a slot (admitted or under way). */
  private readonly slots = new Map<string, Slot>();
  /** Keys left alone for this bundle, until when (epoch ms). */
  private readonly settled = new Map<string, number>();
  private readonly replicaSets = new Map<string, ReplicaSetOwner>();
  /** Workloads that opted out on their own metadata (their Pods count as opted out). */
  private readonly optedOutOwners = new Set<string>();
  /** Per workload: its first read asked for, what it said, or used (later starts read afresh). */
  private readonly firstLooks = new Map<string, FirstLook | 'asked' | 'used'>();
  /** Restarts that completed, with their stale Pods then: not admitted again while only those remain. */
  private readonly completed = new Map<string, ReadonlySet<string>>();
  /** Bare Pods already reported for this bundle. */
  private readonly reportedBare = new Set<string>();
  /** Namespaces without restart rights already reported for this bundle. */
  private readonly reportedWithoutRights = new Set<string>();
  private targets = new Map<string, RestartTarget>();

  /** `podOf` reads a Pod from the restarter's cache. */
  constructor(
    private readonly c: WorkContext,
    private readonly podOf: (namespace: string, name: string) => PodFacts | undefined,
  ) {}

  /** Keys of the restarts holding a slot (tests, logs). */
  underWay(): string[] {
    return [...this.slots.keys()];
  }

  /**
   * The keys to look at after `pod` changed: the restart holding a slot for it. An eviction only
   * when the Pod went away (any other change would cut its backoff short).
   */
  keysFor(pod: PodFacts, deleted: boolean): string[] {
    const keys: string[] = [];
    const own = evictionKey(pod);
    if (this.slots.has(own) && (deleted || pod.finished)) keys.push(own);
    const owner = restartKeyOf(pod, this.replicaSets);
    if (owner !== undefined && owner !== own && this.slots.has(owner)) keys.push(owner);
    return keys;
  }

  /** Judges the cached Pods and admits what may start; see the file comment. */
  async plan(bundle: PassBundle, pods: readonly PodFacts[], nowMs: number): Promise<PlanOutcome> {
    this.follow(bundle);
    const scope = this.c.mayRestart;
    await resolveReplicaSets(
      this.c,
      replicaSetsToResolve(pods, bundle, this.replicaSets, scope),
      this.replicaSets,
    );
    const plan = planRestarts(bundle, pods, this.replicaSets, this.optedOutOwners, scope);
    this.targets = new Map(plan.targets.map((t) => [t.key, t]));
    if (nowMs >= bundle.notBeforeMs) {
      reportBare(this.c, plan.bare, this.reportedBare);
      reportWithoutRights(this.c, plan.withoutRights, this.reportedWithoutRights);
    }
    for (const [key, uids] of this.completed) {
      const t = this.targets.get(key);
      // New stale Pods (the rollout's own, or after a newer bundle): judged anew.
      if (t === undefined || stalePodsOf(t).some((p) => !uids.has(p.uid))) this.completed.delete(key);
    }
    for (const [key, until] of this.settled) if (until <= nowMs) this.settled.delete(key);
    const admitted = admit({
      holding: new Set(this.slots.keys()),
      candidates: plan.targets,
      resting: (key) => this.settled.has(key) || this.completed.has(key),
      nowMs,
      notBeforeMs: bundle.notBeforeMs,
      concurrency: this.c.pacing.concurrency,
    });
    for (const t of admitted)
      this.slots.set(t.key, { key: t.key, target: t, staleUids: new Set(stalePodsOf(t).map((p) => p.uid)) });
    const looks: string[] = [];
    for (const t of plan.targets) {
      if (t.kind !== 'workload' || this.slots.has(t.key) || this.firstLooks.has(t.key)) continue;
      if (this.settled.has(t.key)) continue;
      this.firstLooks.set(t.key, 'asked');
      looks.push(t.key);
    }
    return {
      plan,
      run: [...admitted.map((t) => t.key), ...looks],
      ...replanAfter(plan.targets.length > 0 ? bundle.notBeforeMs : 0, this.settled.values(), nowMs),
    };
  }

  /**
   * Works one key; see the file comment. A refusal (403: no rights there, or a policy refusing the
   * write) leaves the key alone for this bundle, logged once, instead of retrying it forever.
   */
  async run(key: string, nowMs: number): Promise<RunOutcome> {
    try {
      const slot = this.slots.get(key);
      if (slot === undefined) return await this.firstLook(key);
      if (slot.startedAtMs === undefined) return await this.start(slot, nowMs);
      return await this.look(slot, nowMs);
    } catch (err) {
      if (statusCodeOf(err) !== 403) throw err;
      this.settled.set(key, FOREVER);
      this.c.logger.warn(
        { target: key, err: err instanceof Error ? err.message : String(err) },
        'not allowed to restart; left alone for this bundle',
      );
      return this.slots.has(key) ? this.release(key) : {};
    }
  }

  private follow(bundle: PassBundle): void {
    if (bundle.hash === this.hash) return;
    // A new bundle: everything is judged anew; restarts holding a slot keep it.
    this.hash = bundle.hash;
    this.settled.clear();
    this.replicaSets.clear();
    this.optedOutOwners.clear();
    this.firstLooks.clear();
    this.completed.clear();
    this.reportedBare.clear();
    this.reportedWithoutRights.clear();
  }

  /** The first read of a workload with stale Pods: an opt-out counts at once. */
  private async firstLook(key: string): Promise<RunOutcome> {
    const t = this.targets.get(key);
    if (t?.kind !== 'workload' || this.firstLooks.get(key) !== 'asked') return {};
    const hash = this.hash;
    const w = await this.c.calls.readWorkload(t.workload);
    if (hash === undefined || hash !== this.hash || this.firstLooks.get(key) !== 'asked') return {};
    // Gone: its Pods go with it (still 'asked': not read again this bundle).
    if (w === undefined) return {};
    const action = decideWorkload(t.workload.kind, w, hash);
    if (action === 'opted-out') return this.optOut(key);
    this.firstLooks.set(key, {
      action,
      uid: w.metadata?.uid,
      complete: rolloutComplete(t.workload.kind, w),
    });
    return {};
  }

  private optOut(key: string): RunOutcome {
    this.optedOutOwners.add(key);
    this.c.logger.info({ target: key }, 'owner opted out of restarts on trust change');
    return { replan: true };
  }

  /** Lets a slot go (the next target may start). */
  private release(key: string): RunOutcome {
    this.slots.delete(key);
    return { replan: true };
  }

  /** Starts an admitted restart if it is still needed. */
  private async start(slot: Slot, nowMs: number): Promise<RunOutcome> {
    const hash = this.hash;
    const t = slot.target;
    if (hash === undefined) return this.release(slot.key);
    if (t.kind === 'evict') {
      const cached = this.podOf(t.pod.namespace, t.pod.name);
      if (cached?.uid !== t.pod.uid || cached.finished) return this.release(slot.key);
      slot.startedAtMs = nowMs;
      slot.hash = hash;
      return this.evict(slot, nowMs);
    }
    if (!this.targets.has(slot.key)) return this.release(slot.key);
    let look = this.firstLooks.get(slot.key);
    this.firstLooks.set(slot.key, 'used');
    if (look === undefined || look === 'asked' || look === 'used') {
      const w = await this.c.calls.readWorkload(t.workload);
      if (w === undefined) return this.release(slot.key);
      if (hash !== this.hash) return { lookAfterMs: 1 };
      look = {
        action: decideWorkload(t.workload.kind, w, hash),
        uid: w.metadata?.uid,
        complete: rolloutComplete(t.workload.kind, w),
      };
    }
    switch (look.action) {
      case 'opted-out':
        this.slots.delete(slot.key);
        return this.optOut(slot.key);
      case 'evict': {
        // OnDelete: the template alone restarts nothing; its Pods are evicted one by one.
        this.slots.delete(slot.key);
        const pod = t.pods.find((p) => !this.slots.has(evictionKey(p)));
        if (pod === undefined) return { replan: true };
        const key = evictionKey(pod);
        this.slots.set(key, { key, target: { kind: 'evict', key, pod }, staleUids: new Set([pod.uid]) });
        return { run: [key] };
      }
      case 'rolling':
        // Patched before (by this replica or an earlier leader): waited for, never patched again.
        if (look.complete) {
          this.settled.set(slot.key, FOREVER);
          this.c.logger.warn(
            { target: slot.key, stalePods: t.pods.length },
            'rolled out for this bundle, yet Pods still carry an older stamp; left alone',
          );
          return this.release(slot.key);
        }
        break;
      case 'patch':
        await restartWorkload(this.c, t.workload, look.uid, t.pods.length, hash);
        break;
    }
    slot.startedAtMs = nowMs;
    slot.hash = hash;
    return { lookAfterMs: this.nextLook(slot, nowMs) };
  }

  /** Looks at a restart under way: completed, past its deadline, or on. */
  private async look(slot: Slot, nowMs: number): Promise<RunOutcome> {
    const t = slot.target;
    if (t.kind === 'evict') {
      const cached = this.podOf(t.pod.namespace, t.pod.name);
      const gone = cached?.uid !== t.pod.uid || cached.finished;
      const state = slotState(slot, gone, nowMs, this.c.pacing.deadlineMs);
      if (state !== 'under-way') return this.finish(slot, state, nowMs);
      if (slot.evicted !== true) return this.evict(slot, nowMs);
      return { lookAfterMs: this.nextLook(slot, nowMs) };
    }
    const w = await this.c.calls.readWorkload(t.workload);
    // Also a rollout for an older bundle is waited for: the newer one patches it afterwards.
    const complete = w === undefined || rolloutComplete(t.workload.kind, w);
    const state = slotState(slot, complete, nowMs, this.c.pacing.deadlineMs);
    if (state !== 'under-way') return this.finish(slot, state, nowMs);
    return { lookAfterMs: this.nextLook(slot, nowMs) };
  }

  private async evict(slot: Slot, nowMs: number): Promise<RunOutcome> {
    if (slot.target.kind !== 'evict') return {};
    const result = await evictPod(this.c, slot.target.pod, slot.hash ?? this.hash ?? '');
    if (result === 'blocked') return { retry: true };
    if (result === 'gone') return this.finish(slot, 'completed', nowMs);
    slot.evicted = true;
    return { lookAfterMs: this.nextLook(slot, nowMs) };
  }

  private finish(slot: Slot, outcome: 'completed' | 'deadline', nowMs: number): RunOutcome {
    const t = slot.target;
    if (outcome === 'completed') {
      // Not settled: once the cache shows its new Pods, they are judged (a newer bundle may
      // restart it once more); until then the Pods it had are not taken for stale again.
      this.completed.set(slot.key, slot.staleUids);
      return this.release(slot.key);
    }
    const kind = t.kind === 'workload' ? t.workload.kind : 'Pod';
    this.c.metrics.pastDeadline.inc({ kind });
    this.c.logger.warn(
      { target: slot.key, waitedMs: nowMs - (slot.startedAtMs ?? nowMs) },
      'restart not completed by its deadline; going on with the next',
    );
    // A workload is never patched twice for one bundle; a Pod is tried again after the others.
    if (slot.hash === this.hash)
      this.settled.set(slot.key, t.kind === 'workload' ? FOREVER : nowMs + this.c.pacing.deadlineMs);
    return this.release(slot.key);
  }

  private nextLook(slot: Slot, nowMs: number): number {
    return nextLookMs(slot, nowMs, this.c.pacing.deadlineMs, this.c.pollMs ?? DEFAULT_POLL_MS);
  }
}

const stalePodsOf = (t: RestartTarget): readonly PodFacts[] => (t.kind === 'workload' ? t.pods : [t.pod]);
