import type { Logger } from 'pino';
import { RESUME_ANNOTATION, type RolloutPolicyResource } from '../../api/rollout-policy.js';
import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import { ItemExponentialBackoff } from '../../kube/backoff.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { nullEventRecorder, type EventRecorder } from '../../kube/event-recorder.js';
import { Latch } from '../../kube/latch.js';
import type { WorkQueueMetricsProvider } from '../../kube/metrics-hooks.js';
import type { ReadonlyStore } from '../../kube/store.js';
import { WorkQueue } from '../../kube/work-queue.js';
import type { HandlerResult } from '../../kube/work-queue-options.js';
import type { RolloutChoice, RolloutChooser } from '../direct/rollout-chooser.js';
import type { WebhookRelease } from '../direct/runtime-manifests.js';
import { buildSyncSet, type SyncSetResult, type SyncSources } from '../direct/sync-set.js';
import { decisionsOf, resumeTokenOf } from './decisions.js';
import { changesBetween } from './source-changes.js';
import type { SourceChange } from './rollout-policy.js';
import {
  needsPreflight,
  preflightCandidateOf,
  type PreflightCandidate,
} from '../direct/preflight-candidate.js';
import { PolicyFollower } from './policy-follower.js';
import { policyOf, stateOf, statusOf } from './policy-resource.js';
import { revisionId, type Revision } from './revision.js';
import type { RevisionStore } from './revision-store.js';
import { clearPhase, recordPlan, type RolloutMetrics } from './rollout-metrics.js';
import type { RolloutPolicy } from './rollout-policy.js';
import type { RolloutState } from './rollout-state.js';
import { planningViews } from './regression.js';
import { planRollout, type RolloutEvent, type RolloutPlan } from './wave-planner.js';

/**
 * Least time between the starts of two passes: the RuntimeBootstrappers' status updates of a
 * fan-out each ask for a pass, and a pass reads every RuntimeBootstrapper.
 */
const MIN_PASS_GAP_MS = 250;
/** Most time between two passes asked for (a slow pass waits on the KCP more than it computes). */
const MAX_PASS_GAP_MS = 2_000;
/** How long `start` waits for the policy to be listed before the first pass tries anyway. */
const FIRST_SYNC_MS = 10_000;
/** The rollout queue's one key: a pass over the whole fleet. */
const PASS = 'pass';
/** A timer may fire a millisecond before the moment by the wall clock: wake a little after it. */
const WAKE_MARGIN_MS = 5;

/** What the coordinator reads and whom it tells. */
export interface RolloutCoordinatorOptions {
  readonly kcp: ClusterAccess;
  readonly policyName: string;
  readonly bootstrappers: ReadonlyStore<RuntimeBootstrapper>;
  readonly sources: () => SyncSources;
  readonly release: WebhookRelease;
  readonly revisions: RevisionStore;
  /** `--no-auto-rollback` makes this false: a halt only halts. */
  readonly autoRollback: boolean;
  /** How often a watched runtime's report is read (the preflight's discovery is counted in such reads). */
  readonly workloadWatchMs: number;
  readonly metrics: RolloutMetrics;
  /** Metrics of the passes' queue (`rollout`). */
  readonly queueMetrics?: WorkQueueMetricsProvider;
  readonly logger: Logger;
  /** Runtimes whose revision changed: reconcile them. */
  readonly enqueue: (key: string) => void;
  /** Kubernetes Events about the policy (a wave waits, approved, rejected, halted...); none when undefined. */
  readonly events?: EventRecorder;
}

/** The Event each rollout event records on the policy (reason, type). */
const EVENT_OF: Readonly<Record<RolloutEvent, { reason: string; type: 'Normal' | 'Warning' }>> = {
  adopted: { reason: 'Adopted', type: 'Normal' },
  started: { reason: 'Started', type: 'Normal' },
  preflighted: { reason: 'Preflighted', type: 'Normal' },
  advanced: { reason: 'WaveDone', type: 'Normal' },
  awaiting: { reason: 'AwaitingApproval', type: 'Normal' },
  approved: { reason: 'Approved', type: 'Normal' },
  rejected: { reason: 'Rejected', type: 'Warning' },
  paused: { reason: 'Paused', type: 'Normal' },
  unpaused: { reason: 'Unpaused', type: 'Normal' },
  halted: { reason: 'Halted', type: 'Warning' },
  resumed: { reason: 'Resumed', type: 'Normal' },
  completed: { reason: 'Completed', type: 'Normal' },
};

/** The plan in force, with what it needs to answer `choose` at once. */
interface Decided {
  readonly plan: RolloutPlan;
  readonly policy: RolloutPolicy;
  readonly revisions: ReadonlyMap<string, Revision>;
}

/**
 * Runs the rollout (I/O edge of ./wave-planner.ts): each pass takes the RolloutPolicy (watched),
 * stores the live revision, plans from the persisted state and the RuntimeBootstrappers'
 * statuses, and persists the new state in the policy's status with the resourceVersion it read
 * (compare-and-swap), so that several replicas never both advance a wave: a plan is used only
 * once its state is on the KCP. Without a policy nothing is planned (every runtime gets the live
 * set and release, as before rollouts).
 *
 * Passes run on a work queue of one key, when something asks: a RuntimeBootstrapper or the
 * policy changed ({@link poke}), the sources changed, or the moment the plan names came (a soak
 * ends, a health deadline passes). A failed pass is retried with backoff.
 */
export class RolloutCoordinator implements RolloutChooser {
  private decided: Decided | undefined;
  private readonly sets = new Map<string, SyncSetResult>();
  /** Per RuntimeBootstrapper key: the revision and wave `choose` last gave (`<revision> <wave>`). */
  private readonly given = new Map<string, string>();
  private readonly policies: PolicyFollower;
  private readonly queue: WorkQueue;
  private working: Promise<void> | undefined;
  private readonly firstPass = new Latch();
  /** Start (performance.now()) and length of the last pass, for the gap between passes. */
  private lastStart = Number.NEGATIVE_INFINITY;
  private lastLength = 0;
  /** Whether a pass found out if there is a policy (until then, nothing is written anywhere). */
  private known = false;

  constructor(private readonly o: RolloutCoordinatorOptions) {
    this.policies = new PolicyFollower({
      kcp: o.kcp,
      name: o.policyName,
      logger: o.logger,
      onChange: () => {
        this.poke();
      },
    });
    this.queue = new WorkQueue({
      name: 'rollout',
      rateLimiter: new ItemExponentialBackoff({ baseMs: 500, maxMs: 30_000, factor: 2, jitter: 0.1 }),
      metrics: o.queueMetrics,
    });
  }

  /**
   * Watches the policy and runs the first pass; resolves once it ran. A first pass that fails is
   * retried; meanwhile no runtime gets anything written (see {@link choose}).
   */
  async start(): Promise<void> {
    await this.policies.start(FIRST_SYNC_MS);
    this.working = this.queue.start(() => this.runPass(), {
      onError: (_key, error) => {
        this.o.logger.warn({ err: error }, 'rollout pass failed; retrying');
      },
    });
    this.queue.add(PASS);
    await this.firstPass.wait();
  }

  /**
   * Asks for a pass. Passes start at least {@link MIN_PASS_GAP_MS} and twice the last one's
   * length apart (up to {@link MAX_PASS_GAP_MS}), so thousands of status updates a second make a
   * few passes, which take at most about half the time.
   */
  poke(): void {
    const gap = Math.min(MAX_PASS_GAP_MS, Math.max(MIN_PASS_GAP_MS, 2 * this.lastLength));
    this.queue.addAfter(PASS, this.lastStart + gap - performance.now());
  }

  async stop(): Promise<void> {
    await this.queue.shutDownWithDrain();
    await this.working;
    this.firstPass.open(); // a start() still waiting returns
    await this.policies.stop();
  }

  /**
   * Whether a policy's plan decides what each runtime gets: then a new set reaches a runtime when
   * a pass gives it the new revision (it is queued then), and a fan-out to all would only repeat
   * what each has.
   */
  planning(): boolean {
    return this.decided !== undefined;
  }

  /** The set and release of this runtime; undefined without a policy. */
  choose(rb: RuntimeBootstrapper): RolloutChoice | undefined {
    const d = this.decided;
    if (!d) {
      if (this.known) return undefined;
      // Not known yet whether a rollout holds this runtime back: write nothing for now.
      return {
        set: { ok: false, reason: 'rollout: the policy could not be read yet; nothing is written' },
        release: this.o.release,
        wave: 'unplaced',
      };
    }
    const p = placementOf(d, rb);
    const { revision, wave: waveName } = p;
    const content = d.revisions.get(revision);
    this.given.set(`${rb.metadata.namespace}/${rb.metadata.name}`, placed(p));
    const candidate = p.preflight ? this.candidateOf(d.revisions.get(d.plan.state.target)) : undefined;
    const extra = { watch: p.watch, preflight: candidate };
    if (!content) {
      return {
        set: {
          ok: false,
          reason: `rollout: revision ${revision} is not kept on the KCP; nothing is written`,
        },
        release: this.o.release,
        wave: waveName,
        ...extra,
      };
    }
    return { set: this.setOf(content), release: content.release, wave: waveName, ...extra };
  }

  /** The preflight candidate of a revision (none when it is not kept or not consistent). */
  private candidateOf(revision: Revision | undefined): PreflightCandidate | undefined {
    if (!revision) return undefined;
    const set = this.setOf(revision);
    return set.ok ? preflightCandidateOf(set.set) : undefined;
  }

  /**
   * What a new target changes against the stable revision it would start from (a new rollout
   * only; see ./wave-planner.ts): whether it can move running images or pull them with other
   * credentials (the preflight), and which kinds of source it changes (the approvals).
   */
  private async changesOf(
    target: Revision,
    previous: RolloutState,
  ): Promise<{ preflightNeeded: boolean; changes: SourceChange[] | undefined }> {
    const t = this.setOf(target);
    const stableId = previous.phase === 'Complete' ? previous.target : previous.stable;
    const stable = await this.o.revisions.load(stableId);
    const s = stable ? this.setOf(stable) : undefined;
    const stableSet = s?.ok ? s.set : undefined;
    return {
      preflightNeeded: t.ok ? needsPreflight(t.set, stableSet) : false,
      changes: changesBetween(
        { set: t.ok ? t.set : undefined, releaseVersion: target.release.version },
        stable ? { set: stableSet, releaseVersion: stable.release.version } : undefined,
      ),
    };
  }

  private setOf(revision: Revision): SyncSetResult {
    let set = this.sets.get(revision.id);
    if (!set) {
      set = buildSyncSet(revision.sources);
      this.sets.set(revision.id, set);
    }
    return set;
  }

  /** One pass, as the queue's handler: after it, the next at the moment the plan names. */
  private async runPass(): Promise<HandlerResult | undefined> {
    const t0 = performance.now();
    this.lastStart = t0;
    try {
      const wakeAt = await this.pass();
      if (wakeAt === undefined) return undefined;
      return { requeueAfter: Math.max(1, wakeAt - Date.now() + WAKE_MARGIN_MS) };
    } finally {
      this.lastLength = performance.now() - t0;
      this.firstPass.open();
    }
  }

  /** Plans and persists; returns when time alone would change the plan (epoch ms). */
  private async pass(): Promise<number | undefined> {
    // Not listed yet (the KCP slow, the rights missing): nothing is known, so nothing is decided.
    if (!this.policies.synced()) throw new Error('the RolloutPolicy is not listed yet');
    const resource = this.policies.current();
    if (!resource) {
      this.known = true;
      if (this.decided) {
        this.o.logger.info('no rollout policy: every runtime gets the live set and release');
        this.decided = undefined;
        clearPhase(this.o.metrics);
        this.enqueueChanged();
        this.given.clear();
      }
      return undefined;
    }
    const { policy, problem } = policyOf(resource, { autoRollback: this.o.autoRollback });
    const sources = this.o.sources();
    const live = buildSyncSet(sources);
    const previous = stateOf(resource.status);
    if (!live.ok && !previous) return undefined; // nothing consistent to adopt yet
    const target: Revision | undefined = live.ok
      ? { id: revisionId(sources.version, this.o.release.version), sources, release: this.o.release }
      : undefined;
    const protect = previous ? [previous.stable, previous.target] : [];
    if (target) await this.o.revisions.save(target, protect);
    const rbs = this.o.bootstrappers.list();
    // Failures count only as regressions (./regression.ts): what the planner's failedPods means.
    const views = planningViews(rbs);
    const starting = target !== undefined && previous !== undefined && previous.target !== target.id;
    const found = starting ? await this.changesOf(target, previous) : undefined;
    // Inconsistent sources: the rollout in progress goes on with the target it has.
    const targetId = target?.id ?? previous?.target ?? '';
    const decisions = decisionsOf(this.policies.decisions(), resource.metadata.name, targetId);
    const now = Date.now();
    const plan = planRollout({
      preflightNeeded: found?.preflightNeeded ?? false,
      ...(found?.changes !== undefined ? { changes: found.changes } : {}),
      decisions,
      policy,
      runtimes: views,
      target: targetId,
      state: previous,
      now,
      workloadWatchMs: this.o.workloadWatchMs,
      resumeToken: resumeTokenOf(resource.metadata.annotations?.[RESUME_ANNOTATION], decisions.resume),
    });
    const revisions = new Map<string, Revision>();
    for (const id of new Set([plan.state.stable, plan.state.target])) {
      const r = await this.o.revisions.load(id);
      if (r) revisions.set(id, r);
    }
    const atTarget = views.filter((v) => v.current === plan.state.target);
    const status = statusOf({
      state: plan.state,
      policy,
      generation: resource.metadata.generation,
      message: plan.message,
      problem,
      runtimes: {
        total: rbs.length,
        atTarget: atTarget.length,
        healthy: atTarget.filter((v) => v.health === 'healthy').length,
      },
      ...(decisions.paused ? { paused: decisions.paused } : {}),
      ...(plan.awaiting ? { awaiting: plan.awaiting } : {}),
      ...(resource.status ? { previous: resource.status } : {}),
      now,
    });
    // Another writer won: its write comes on the watch and asks for a pass.
    if (!(await this.policies.writeStatus(resource, status))) return undefined;
    this.record(plan, policy, rbs);
    this.recordEvents(plan, resource);
    this.decided = { plan, policy, revisions };
    this.known = true;
    this.enqueueChanged();
    return plan.wakeAt;
  }

  private record(plan: RolloutPlan, policy: RolloutPolicy, rbs: readonly RuntimeBootstrapper[]): void {
    recordPlan(this.o.metrics, plan, this.decided?.plan, rbs);
    if (plan.events.length === 0) return;
    const { target, stable } = plan.state;
    const waves = policy.waves.length + 1;
    this.o.logger.info({ events: plan.events, target, stable, waves }, `rollout: ${plan.message}`);
  }

  /** Records the plan's events on the policy, once its state is stored (best effort). */
  private recordEvents(plan: RolloutPlan, resource: RolloutPolicyResource): void {
    const events = this.o.events ?? nullEventRecorder;
    for (const e of plan.events) {
      const { reason, type } = EVENT_OF[e];
      events.record({
        regarding: {
          apiVersion: resource.apiVersion ?? 'rt-bootstrapper.kyma-project.io/v1alpha1',
          kind: 'RolloutPolicy',
          name: resource.metadata.name,
          ...(resource.metadata.uid !== undefined ? { uid: resource.metadata.uid } : {}),
        },
        type,
        reason,
        action: 'Rollout',
        note: plan.message,
      });
    }
  }

  /**
   * Reconciles every runtime whose revision or wave differs from what `choose` gave it last (a
   * new wave name, or none once the policy is gone, must reach its status too).
   */
  private enqueueChanged(): void {
    const d = this.decided;
    for (const rb of this.o.bootstrappers.list()) {
      const key = `${rb.metadata.namespace}/${rb.metadata.name}`;
      const p = d ? placementOf(d, rb) : undefined;
      if (this.given.get(key) !== (p ? placed(p) : undefined)) this.o.enqueue(key);
    }
  }
}

/** Where the plan in force puts a runtime: its revision, its wave's name, and how it is watched. */
interface Placement {
  readonly revision: string;
  readonly wave: string;
  readonly watch: boolean;
  readonly preflight: boolean;
}

/** The placement of a runtime under the plan in force. */
function placementOf(d: Decided, rb: RuntimeBootstrapper): Placement {
  const id = rb.spec.runtimeID;
  // A runtime the last pass did not know: the stable revision until a pass places it.
  const revision = d.plan.desired.get(id) ?? d.plan.state.stable;
  const wave = d.plan.waves.get(id);
  return {
    revision,
    wave: wave === undefined ? 'unplaced' : (d.policy.waves[wave]?.name ?? 'rest'),
    watch: d.plan.watch.has(id),
    preflight: d.plan.preflight.has(id),
  };
}

/** A placement as text: a runtime whose text changed is reconciled. */
function placed(p: Placement): string {
  return `${p.revision} ${p.wave}${p.watch ? ' watched' : ''}${p.preflight ? ' preflight' : ''}`;
}
