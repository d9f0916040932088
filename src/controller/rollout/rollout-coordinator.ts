import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { RolloutPolicyResource, RolloutPolicyStatus } from '../../api/rollout-policy.js';
import { RESUME_ANNOTATION, rolloutPolicyPath } from '../../api/rollout-policy.js';
import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import type { ReadonlyStore } from '../../kube/store.js';
import type { RolloutChoice, RolloutChooser } from '../direct/rollout-chooser.js';
import type { WebhookRelease } from '../direct/runtime-manifests.js';
import { buildSyncSet, type SyncSetResult, type SyncSources } from '../direct/sync-set.js';
import { policyOf, stateOf, statusOf } from './policy-resource.js';
import { revisionId, type Revision } from './revision.js';
import type { RevisionStore } from './revision-store.js';
import { setPhase, type RolloutMetrics } from './rollout-metrics.js';
import type { RolloutPolicy } from './rollout-policy.js';
import { runtimeView } from './runtime-view.js';
import { planRollout, type RolloutPlan } from './wave-planner.js';

/** Least time between two passes. */
const MIN_PASS_GAP_MS = 250;

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
  readonly metrics: RolloutMetrics;
  readonly logger: Logger;
  /** Runtimes whose revision changed: reconcile them. */
  readonly enqueue: (key: string) => void;
  /** Pass period (default 2 s); RuntimeBootstrapper and source changes also ask for a pass. */
  readonly periodMs?: number;
}

/** The plan in force, with what it needs to answer `choose` at once. */
interface Decided {
  readonly plan: RolloutPlan;
  readonly policy: RolloutPolicy;
  readonly revisions: ReadonlyMap<string, Revision>;
}

/**
 * Runs the rollout (I/O edge of ./wave-planner.ts): each pass reads the RolloutPolicy, stores
 * the live revision, plans from the persisted state and the RuntimeBootstrappers' statuses, and
 * persists the new state in the policy's status with the resourceVersion it read
 * (compare-and-swap), so that several replicas never both advance a wave: a plan is used only
 * once its state is on the KCP. Without a policy nothing is planned (every runtime gets the live
 * set and release, as before rollouts).
 */
export class RolloutCoordinator implements RolloutChooser {
  private decided: Decided | undefined;
  private readonly sets = new Map<string, SyncSetResult>();
  /** Per RuntimeBootstrapper key: the revision `choose` last gave. */
  private readonly given = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private delay: NodeJS.Timeout | undefined;
  private lastEnd = 0;
  /** Whether a pass found out if there is a policy (until then, nothing is written anywhere). */
  private known = false;
  private started = false;

  constructor(private readonly o: RolloutCoordinatorOptions) {}

  /**
   * Runs the first pass, then one every period. A first pass that fails is retried by the next
   * ones; meanwhile no runtime gets anything written (see {@link choose}).
   */
  async start(): Promise<void> {
    try {
      await this.pass();
    } catch (error) {
      this.o.logger.warn({ err: error }, 'first rollout pass failed; retrying');
    }
    this.started = true;
    this.timer = setInterval(() => {
      this.poke();
    }, this.o.periodMs ?? 2_000);
    this.timer.unref();
  }

  /**
   * Asks for a pass soon: one runs at a time, one more follows if asked meanwhile, and passes are
   * at least {@link MIN_PASS_GAP_MS} apart (a fan-out's status updates each ask for one, and a
   * pass reads every RuntimeBootstrapper).
   */
  poke(): void {
    // Before start() the first pass is under way: passes never overlap.
    if (this.stopped || !this.started) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.delay) return; // the pass already asked for will see this too
    const wait = Math.max(0, this.lastEnd + MIN_PASS_GAP_MS - Date.now());
    this.delay = setTimeout(() => {
      this.delay = undefined;
      if (this.stopped) return;
      this.running = this.pass()
        .catch((error: unknown) => {
          this.o.logger.warn({ err: error }, 'rollout pass failed; retrying');
        })
        .finally(() => {
          this.running = undefined;
          this.lastEnd = Date.now();
          if (this.again) {
            this.again = false;
            this.poke();
          }
        });
    }, wait);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.delay) clearTimeout(this.delay);
    await this.running;
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
    const id = rb.spec.runtimeID;
    // A runtime the last pass did not know: the stable revision until a pass places it.
    const revision = d.plan.desired.get(id) ?? d.plan.state.stable;
    const content = d.revisions.get(revision);
    this.given.set(`${rb.metadata.namespace}/${rb.metadata.name}`, revision);
    const wave = d.plan.waves.get(id);
    const waveName = wave === undefined ? 'unplaced' : (d.policy.waves[wave]?.name ?? 'rest');
    if (!content) {
      return {
        set: {
          ok: false,
          reason: `rollout: revision ${revision} is not kept on the KCP; nothing is written`,
        },
        release: this.o.release,
        wave: waveName,
      };
    }
    return { set: this.setOf(content), release: content.release, wave: waveName };
  }

  private setOf(revision: Revision): SyncSetResult {
    let set = this.sets.get(revision.id);
    if (!set) {
      set = buildSyncSet(revision.sources);
      this.sets.set(revision.id, set);
    }
    return set;
  }

  private async pass(): Promise<void> {
    const resource = await this.readPolicy();
    if (!resource) {
      this.known = true;
      if (this.decided) {
        this.o.logger.info('no rollout policy: every runtime gets the live set and release');
        this.decided = undefined;
        this.enqueueChanged();
        this.given.clear();
      }
      return;
    }
    const { policy, problem } = policyOf(resource, { autoRollback: this.o.autoRollback });
    const sources = this.o.sources();
    const live = buildSyncSet(sources);
    const previous = stateOf(resource.status);
    if (!live.ok && !previous) return; // nothing consistent to adopt yet
    const target: Revision | undefined = live.ok
      ? { id: revisionId(sources.version, this.o.release.version), sources, release: this.o.release }
      : undefined;
    const protect = previous ? [previous.stable, previous.target] : [];
    if (target) await this.o.revisions.save(target, protect);
    const rbs = this.o.bootstrappers.list();
    const plan = planRollout({
      policy,
      runtimes: rbs.map(runtimeView),
      // Inconsistent sources: the rollout in progress goes on with the target it has.
      target: target?.id ?? previous?.target ?? '',
      state: previous,
      now: Date.now(),
      ...(resource.metadata.annotations?.[RESUME_ANNOTATION] !== undefined
        ? { resumeToken: resource.metadata.annotations[RESUME_ANNOTATION] }
        : {}),
    });
    const revisions = new Map<string, Revision>();
    for (const id of new Set([plan.state.stable, plan.state.target])) {
      const r = await this.o.revisions.load(id);
      if (r) revisions.set(id, r);
    }
    const atTarget = rbs.filter((rb) => runtimeView(rb).current === plan.state.target);
    const status = statusOf({
      state: plan.state,
      policy,
      generation: resource.metadata.generation,
      message: plan.message,
      ...(problem !== undefined ? { problem } : {}),
      runtimes: {
        total: rbs.length,
        atTarget: atTarget.length,
        healthy: atTarget.filter((rb) => runtimeView(rb).health === 'healthy').length,
      },
    });
    if (!(await this.persist(resource, status))) return; // another writer won: read again next pass
    this.record(plan, policy);
    this.decided = { plan, policy, revisions };
    this.known = true;
    this.enqueueChanged();
  }

  private record(plan: RolloutPlan, policy: RolloutPolicy): void {
    const m = this.o.metrics;
    setPhase(m, plan.state.phase);
    m.wave.set(plan.state.wave);
    if (plan.events.includes('halted')) m.halts.inc();
    const before = this.decided?.plan;
    const newlyBack = plan.rollback.filter((id) => !(before?.rollback.includes(id) ?? false));
    if (newlyBack.length > 0) m.rollbacks.inc(newlyBack.length);
    const byRelease = new Map<string, number>();
    for (const rb of this.o.bootstrappers.list()) {
      const v = rb.status?.webhookVersion;
      if (v !== undefined) byRelease.set(v, (byRelease.get(v) ?? 0) + 1);
    }
    m.runtimesByWebhookVersion.reset();
    for (const [version, n] of byRelease) m.runtimesByWebhookVersion.set({ version }, n);
    if (plan.events.length > 0) {
      this.o.logger.info(
        {
          events: plan.events,
          target: plan.state.target,
          stable: plan.state.stable,
          waves: policy.waves.length + 1,
        },
        `rollout: ${plan.message}`,
      );
    }
  }

  /** Reconciles every runtime whose revision differs from what `choose` gave it last. */
  private enqueueChanged(): void {
    for (const rb of this.o.bootstrappers.list()) {
      const key = `${rb.metadata.namespace}/${rb.metadata.name}`;
      const d = this.decided;
      const now = d ? (d.plan.desired.get(rb.spec.runtimeID) ?? d.plan.state.stable) : undefined;
      if (this.given.get(key) !== now) this.o.enqueue(key);
    }
  }

  private async readPolicy(): Promise<RolloutPolicyResource | undefined> {
    try {
      return await kubeRequest<RolloutPolicyResource>(this.o.kcp, {
        method: 'GET',
        path: rolloutPolicyPath(this.o.policyName),
        timeoutMs: 10_000,
      });
    } catch (error) {
      // No policy, or no CRD: one wave of everything.
      if (statusCodeOf(error) === 404) return undefined;
      throw error;
    }
  }

  /** Writes the status if it changed; false when another writer changed the policy first. */
  private async persist(resource: RolloutPolicyResource, status: RolloutPolicyStatus): Promise<boolean> {
    // By content: the API server returns keys in its own order.
    if (isDeepStrictEqual(JSON.parse(JSON.stringify(status)), resource.status ?? {})) return true;
    try {
      await kubeRequest(this.o.kcp, {
        method: 'PATCH',
        path: `${rolloutPolicyPath(resource.metadata.name)}/status`,
        // A merge patch replaces the status whole (fields gone stay gone), only at the version read.
        body: {
          metadata: { resourceVersion: resource.metadata.resourceVersion },
          status: withNulls(resource.status, status),
        },
        timeoutMs: 10_000,
        parseResponse: false,
      });
      return true;
    } catch (error) {
      if (statusCodeOf(error) === 409) return false;
      throw error;
    }
  }
}

/** `next` with null for every top-level field of `prev` it lacks (a merge patch removes those). */
function withNulls(
  prev: RolloutPolicyStatus | undefined,
  next: RolloutPolicyStatus,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...next };
  for (const k of Object.keys(prev ?? {})) if (!(k in next)) out[k] = null;
  return out;
}
