import { NO_DECISIONS, type Decisions } from './decisions.js';
import type { RolloutPolicy, SourceChange } from './rollout-policy.js';
import {
  FAILURES_KEPT,
  GATED_PHASES,
  type DecisionRecord,
  type RolloutFailure,
  type RolloutState,
} from './rollout-state.js';
import { assignWaves } from './wave-assignment.js';

/** A runtime as the planner sees it. */
export interface RuntimeView {
  readonly id: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** The revision it is on (set and webhook release applied); undefined before its first install. */
  readonly current?: string;
  /**
   * Its health at `current`: healthy (Ready, the webhook serves it), failed (the webhook refused
   * it, say), or pending (installing, unreachable, not yet reported).
   */
  readonly health: 'healthy' | 'failed' | 'pending';
  /** Why it is not healthy. */
  readonly reason?: string;
  /** Paused or being deleted: in no wave, never counted, never blocking. */
  readonly excluded?: boolean;
  /**
   * When the KCP applied `current`'s set there (epoch ms, the KCP's own record, `status.appliedAt`):
   * its webhook cannot have seen a Pod under that set earlier, whatever its report says.
   */
  readonly appliedAt?: number;
  /**
   * What its webhook reports of the Pods changed under `current`'s set (DESIGN §11); undefined when
   * the webhook reports no workloads (a release that does not follow Pods, or not read yet).
   */
  readonly workloads?: WorkloadView;
  /**
   * Whether its webhook follows Pods (it reports workloads, of whatever set) and so checks a
   * preflight. Not {@link workloads}: a rollback or a new set leaves the figures read before of
   * another set until the next read, and a canary must not skip a preflight for that.
   */
  readonly followsPods?: boolean;
  /** The last preflight its webhook reports; undefined when none. */
  readonly preflight?: PreflightView;
}

/** The Pods changed under a runtime's revision, as the planner needs them. */
export interface WorkloadView {
  /** Pods under it that exist now. */
  readonly pods: number;
  /** Distinct Pods that ever failed under it for a reason the change can cause. */
  readonly failedPods: number;
  /**
   * When the first Pod under it was seen (epoch ms), as the runtime reports it: a claim, read
   * through {@link firstPodAtOf}; undefined when none was.
   */
  readonly firstPodAt?: number;
  /** The failures' samples in one line (image, reason). */
  readonly detail?: string;
}

/** A runtime's preflight report, as the planner needs it. */
export interface PreflightView {
  /** The candidate set version checked. */
  readonly set: string;
  readonly done: boolean;
  /** Missing or refused images (unreachable registries are not the candidate's fault). */
  readonly failed: boolean;
  /** What failed, in one line (image, where it would go, why). */
  readonly detail?: string;
}

/** What the planner decides from. */
export interface PlanInput {
  readonly policy: RolloutPolicy;
  readonly runtimes: readonly RuntimeView[];
  /** The revision the sources and the release ask for now. */
  readonly target: string;
  /** The persisted state; undefined for a policy that never saw a rollout. */
  readonly state: RolloutState | undefined;
  readonly now: number;
  /**
   * How often the KCP reads the report of a runtime the rollout watches (the setting
   * `workloadWatchMs`): a preflight waits {@link PREFLIGHT_DISCOVERY_READS} such reads.
   */
  readonly workloadWatchMs: number;
  /** The policy's resume annotation, if set: a value not acted on yet resumes a halted rollout. */
  readonly resumeToken?: string;
  /**
   * Whether `target`'s overrides or pull Secret differ from the stable revision's (only read when
   * a new target starts): then, with the policy's preflight on, phase Preflight comes first.
   */
  readonly preflightNeeded?: boolean;
  /**
   * What `target` changes against the stable revision (only read when a new target starts, then
   * kept in the state); undefined: not known, so every approval a wave asks for applies.
   */
  readonly changes?: readonly SourceChange[];
  /** People's decisions on the policy about `target` (./decisions.ts); none when undefined. */
  readonly decisions?: Decisions;
}

/** What happened in this step (for events, logs and metrics). */
export type RolloutEvent =
  | 'started'
  | 'adopted'
  | 'preflighted'
  | 'advanced'
  | 'halted'
  | 'resumed'
  | 'completed'
  | 'awaiting'
  | 'approved'
  | 'rejected'
  | 'paused'
  | 'unpaused';

/** The wave that waits to start (phases AwaitingApproval and Paused), and for what. */
export interface Awaiting {
  readonly wave: string;
  /** When the wait began (epoch ms). */
  readonly since: number;
  /** It needs an approval not given yet. */
  readonly approval: boolean;
  /** The rollout is paused. */
  readonly paused: boolean;
}

/** The planner's answer. */
export interface RolloutPlan {
  readonly state: RolloutState;
  /** The revision each runtime must have now. */
  readonly desired: ReadonlyMap<string, string>;
  /** Each runtime's wave index. */
  readonly waves: ReadonlyMap<string, number>;
  /** Runtimes on the target that must go back to the stable revision now. */
  readonly rollback: readonly string[];
  /** Runtimes that must hold the target as a preflight candidate now (phase Preflight's wave 0). */
  readonly preflight: ReadonlySet<string>;
  /**
   * Runtimes whose webhook's report is read often now: at the target in a wave under way, or
   * checking the preflight (a failure must be seen within the soak).
   */
  readonly watch: ReadonlySet<string>;
  readonly events: readonly RolloutEvent[];
  /** One line: where the rollout stands and why. */
  readonly message: string;
  /**
   * When time alone changes this plan (a soak ends, a health deadline passes), epoch ms; undefined
   * when only a change of the runtimes, the policy or the target can.
   */
  readonly wakeAt?: number;
  /** The wave waiting at its gate, and for what; undefined while none waits. */
  readonly awaiting?: Awaiting;
}

/**
 * Decides which revision each runtime gets (pure). Wave n+1 starts only when every runtime of the
 * waves started so far is healthy at the target (or counted failed short of a halt) and the wave
 * soaked; more failures than the threshold, on at least the policy's minimum of runtimes, halt
 * it, and a halt puts the runtimes on the target back on the stable revision unless auto-rollback
 * is off. A runtime's report speaks for that runtime only: one not healthy within the health
 * deadline of its wave's start, or whose Pods are still under observation `observeFor` after the
 * wave soaked, counts as failed itself, so no runtime blocks the wave forever.
 */
export function planRollout(input: PlanInput): RolloutPlan {
  const { policy, runtimes, now } = input;
  const events: RolloutEvent[] = [];
  const active = runtimes.filter((r) => r.excluded !== true);
  const waves = assignWaves(policy.waves, active);
  const lastWave = policy.waves.length;
  const decisions = input.decisions ?? NO_DECISIONS;
  const gate = (s: RolloutState, wave: number): RolloutState => startWave(s, wave, input, events);
  let state = begin(input, events);
  if (input.resumeToken !== undefined && input.resumeToken !== state.resumeToken) {
    const halted = state.phase === 'Halted';
    state = { ...state, resumeToken: input.resumeToken };
    if (halted) {
      const { haltReason: _dropped, ...rest } = state;
      events.push('resumed');
      // The halted wave starts again, through its gate: a pause or a missing approval holds it.
      state = gate({ ...rest, failures: [] }, rest.wave);
    }
  }
  const rejected = decisions.rejected;
  if (rejected && state.phase !== 'Halted' && state.phase !== 'Complete') {
    // A person's rejection halts like failures do: nobody else gets the target, and the runtimes
    // on it go back to the stable revision (unless auto rollback is off).
    const record: DecisionRecord = {
      wave: waveName(policy, state.wave),
      decision: 'Rejected',
      by: rejected.by,
      at: rejected.at,
      name: rejected.name,
    };
    state = {
      ...state,
      phase: 'Halted',
      haltReason: `rejected by ${rejected.by} at ${isoOf(rejected.at)} (RolloutDecision ${rejected.name})${rejected.reason ? `: ${rejected.reason}` : ''}`,
      decisions: [...(state.decisions ?? []), record],
    };
    events.push('rejected', 'halted');
  }
  let observeUntil: number | undefined;
  let discoverUntil: number | undefined;
  if (state.phase === 'Preflight') {
    const members = active.filter((r) => (waves.get(r.id) ?? lastWave) <= 0);
    const next = preflightStep(
      state,
      policy,
      members,
      now,
      PREFLIGHT_DISCOVERY_READS * input.workloadWatchMs,
    );
    state = next.state;
    discoverUntil = next.wakeAt;
    if (next.event) events.push(next.event);
    if (next.event === 'preflighted') state = gate(state, 0);
  }
  if (GATED_PHASES.has(state.phase)) {
    // The waves before the waiting one keep the target: their failures halt as during a soak.
    const members = active.filter((r) => (waves.get(r.id) ?? lastWave) < state.wave);
    const failures = failuresOf(members, state, policy, now);
    const halt = haltOf(failures, members.length, state, policy, state.wave - 1);
    if (halt) {
      state = halt;
      events.push('halted');
    } else {
      state = gate({ ...state, failures: failures.slice(0, FAILURES_KEPT) }, state.wave);
    }
  }
  while (state.phase === 'Progressing' || state.phase === 'Soaking') {
    const members = active.filter((r) => (waves.get(r.id) ?? lastWave) <= state.wave);
    const failures = failuresOf(members, state, policy, now);
    const halt = haltOf(failures, members.length, state, policy, state.wave);
    if (halt) {
      state = halt;
      events.push('halted');
      break;
    }
    const failed = new Set(failures.map((f) => f.id));
    const settled = members.every((r) => failed.has(r.id) || healthyAt(r, state.target));
    if (!settled) {
      const { healthySince: _reset, ...rest } = state;
      state = { ...rest, phase: 'Progressing', failures: failures.slice(0, FAILURES_KEPT) };
      break;
    }
    const healthySince = state.healthySince ?? now;
    const soak = soakOf(policy, state.wave);
    if (now - healthySince < soak) {
      state = { ...state, phase: 'Soaking', healthySince, failures: failures.slice(0, FAILURES_KEPT) };
      break;
    }
    // Soaked: each runtime whose Pods run under the target must have run them observeFor long
    // (one where no Pod was created under it counts healthy now, at the soak's end); one still
    // observing observeFor after the soak ended counted failed above (see failuresOf).
    const observing = members
      .filter((r) => !failed.has(r.id))
      .map((r) => observedAt(r, policy, now))
      .filter((t): t is number => t !== undefined && t > now);
    if (observing.length > 0) {
      observeUntil = Math.min(...observing, healthySince + soak + policy.workloads.observeForMs);
      state = { ...state, phase: 'Soaking', healthySince, failures: failures.slice(0, FAILURES_KEPT) };
      break;
    }
    const { healthySince: _done, ...rest } = state;
    state = { ...rest, wave: state.wave + 1, waveStartedAt: now, failures: failures.slice(0, FAILURES_KEPT) };
    events.push('advanced');
    if (state.wave > lastWave) {
      state = { ...state, phase: 'Complete', stable: state.target };
      events.push('completed');
    } else {
      state = gate(state, state.wave);
    }
  }
  const desired = new Map<string, string>();
  const rollback: string[] = [];
  for (const r of runtimes) {
    const want = desiredOf(r, waves.get(r.id) ?? lastWave, state, policy);
    desired.set(r.id, want);
    if (r.current === state.target && want !== state.target) rollback.push(r.id);
  }
  const wakeAt = observeUntil ?? discoverUntil ?? wakeAtOf(state, policy, now);
  const { preflight, watch } = watchedBy(state, active, waves, lastWave);
  const awaiting = GATED_PHASES.has(state.phase)
    ? {
        wave: waveName(policy, state.wave),
        since: state.waveStartedAt,
        approval:
          needsApproval(policy, state, state.wave) && !approvalOf(state, decisions, policy, state.wave),
        paused: decisions.paused !== undefined,
      }
    : undefined;
  return {
    state,
    desired,
    waves,
    rollback,
    preflight,
    watch,
    events,
    message: describe(state, policy, active, waves, now, decisions),
    wakeAt,
    ...(awaiting ? { awaiting } : {}),
  };
}

/**
 * Whether wave `wave` asks for an approval of the target: it has an approval gate, and the gate
 * names no sources, or one the target changes (changes not known: every gate applies).
 */
export function needsApproval(policy: RolloutPolicy, state: RolloutState, wave: number): boolean {
  const gate = policy.waves[wave]?.approval;
  if (gate === undefined) return false;
  if (gate.sources === undefined || gate.sources.length === 0 || state.changes === undefined) return true;
  const changes = state.changes;
  return gate.sources.some((s) => changes.includes(s));
}

/**
 * The approval that lets wave `wave` start: one the state recorded (a resumed wave was approved
 * before), else a decision approving it for the target; undefined when there is none.
 */
function approvalOf(
  state: RolloutState,
  decisions: Decisions,
  policy: RolloutPolicy,
  wave: number,
): DecisionRecord | undefined {
  const name = waveName(policy, wave);
  const recorded = state.decisions?.find((d) => d.decision === 'Approved' && d.wave === name);
  if (recorded) return recorded;
  const given = decisions.approvals.find((a) => a.wave === name);
  return given
    ? { wave: name, decision: 'Approved', by: given.by, at: given.at, name: given.name }
    : undefined;
}

/**
 * Wave `wave` starts now, unless its gate holds it (pure): a pause holds every wave, a missing
 * approval the waves that ask for one. A wave that waits keeps when its wait began; one that
 * starts records the approval that let it, and its health deadline counts from now.
 */
function startWave(
  state: RolloutState,
  wave: number,
  input: PlanInput,
  events: RolloutEvent[],
): RolloutState {
  const { policy, now } = input;
  const decisions = input.decisions ?? NO_DECISIONS;
  const waiting = GATED_PHASES.has(state.phase) && state.wave === wave;
  const since = waiting ? state.waveStartedAt : now;
  const { healthySince: _none, ...base } = state;
  if (decisions.paused) {
    if (state.phase !== 'Paused') events.push('paused');
    return { ...base, phase: 'Paused', wave, waveStartedAt: since };
  }
  if (state.phase === 'Paused') events.push('unpaused');
  const approval = needsApproval(policy, state, wave) ? approvalOf(state, decisions, policy, wave) : null;
  if (approval === undefined) {
    if (state.phase !== 'AwaitingApproval' || state.wave !== wave) events.push('awaiting');
    return { ...base, phase: 'AwaitingApproval', wave, waveStartedAt: since };
  }
  const recorded = approval === null || (state.decisions ?? []).some((d) => d.name === approval.name);
  if (approval !== null && !recorded) events.push('approved');
  return {
    ...base,
    phase: 'Progressing',
    wave,
    waveStartedAt: now,
    ...(recorded ? {} : { decisions: [...(state.decisions ?? []), approval] }),
  };
}

/** The halted state when `failures` of `members` runtimes halt the rollout; undefined otherwise. */
function haltOf(
  failures: readonly RolloutFailure[],
  members: number,
  state: RolloutState,
  policy: RolloutPolicy,
  wave: number,
): RolloutState | undefined {
  const minimum = haltMinimum(policy, members);
  if (!(failures.length > policy.failureThreshold && failures.length >= minimum)) return undefined;
  const first = failures[0];
  return {
    ...state,
    phase: 'Halted',
    haltReason: `${failures.length} runtime(s) failed in wave ${waveName(policy, wave)} (threshold ${policy.failureThreshold}, minimum ${minimum})${first ? `; ${first.id}: ${first.reason}` : ''}`,
    failures: failures.slice(0, FAILURES_KEPT),
  };
}

/** The set version of a revision ID (`<set>/<release>`; an ID without a release is all set). */
export function setOf(revision: string): string {
  const slash = revision.indexOf('/');
  return slash < 0 ? revision : revision.slice(0, slash);
}

/**
 * Failed runtimes a halt needs now: the policy's minimum, but never more than the runtimes of the
 * waves started so far (a one-runtime wave halts on its one), and at least 1.
 */
export function haltMinimum(policy: RolloutPolicy, members: number): number {
  return Math.max(1, Math.min(policy.minFailedRuntimes, members));
}

/**
 * When the first Pod under a runtime's revision was seen, as far as the KCP believes its report
 * (pure): not before the KCP applied that set there, never after now. A report is a claim about
 * that runtime only, and its clock is its admin's.
 */
export function firstPodAtOf(r: RuntimeView, now: number): number | undefined {
  const reported = r.workloads?.firstPodAt;
  if (reported === undefined) return undefined;
  return Math.min(now, Math.max(reported, r.appliedAt ?? Number.NEGATIVE_INFINITY));
}

/**
 * How many reads of a runtime's report while the rollout watches it a preflight waits, to learn
 * whether a wave-0 runtime checks (its webhook follows Pods), before it starts wave 0 without it.
 */
export const PREFLIGHT_DISCOVERY_READS = 3;

/**
 * One pass of phase Preflight (pure): runtimes of wave 0 that report missing or refused images for
 * the target's set, as many as the policy's minimum (see {@link haltMinimum}), halt the rollout
 * before anyone has the target; fewer are recorded, not acted on. Once every one that checks is
 * done (or the deadline passed), wave 0 starts. A runtime whose webhook reports no workloads runs a
 * release that cannot check: it is not waited for.
 */
function preflightStep(
  state: RolloutState,
  policy: RolloutPolicy,
  members: readonly RuntimeView[],
  now: number,
  discoveryMs: number,
): { state: RolloutState; event?: RolloutEvent; wakeAt?: number } {
  const set = setOf(state.target);
  const checking = members.filter((r) => r.followsPods === true);
  const ofTarget = (r: RuntimeView): PreflightView | undefined =>
    r.preflight?.set === set ? r.preflight : undefined;
  const failures = checking
    .filter((r) => ofTarget(r)?.failed === true)
    .map((r) => ({
      id: r.id,
      reason: `preflight of set ${set}: ${ofTarget(r)?.detail ?? 'images missing or refused at their new location'}`,
    }))
    .sort((a, b) => a.id.localeCompare(b.id));
  const first = failures[0];
  // No threshold: a registry that lacks an image lacks it for every runtime that runs it. But one
  // runtime's report is its own claim, so the minimum of runtimes applies.
  const minimum = haltMinimum(policy, members.length);
  if (first && failures.length >= minimum) {
    return {
      state: {
        ...state,
        phase: 'Halted',
        haltReason: `preflight failed on ${failures.length} runtime(s) of wave ${waveName(policy, 0)} (minimum ${minimum}) before any had the set; ${first.id}: ${first.reason}`,
        failures: failures.slice(0, FAILURES_KEPT),
      },
      event: 'halted',
    };
  }
  const done = checking.every((r) => ofTarget(r)?.done === true);
  const late = now - state.waveStartedAt >= policy.healthDeadlineMs;
  // A runtime not known to follow Pods may only not have been read yet (its report is read at
  // rest once a minute, but every `workloadWatchMs` while the preflight watches it): waited for
  // that many reads.
  const undecided = checking.length < members.length && now - state.waveStartedAt < discoveryMs;
  if ((!done || undecided) && !late) {
    const waiting = { ...state, failures: failures.slice(0, FAILURES_KEPT) };
    return done ? { state: waiting, wakeAt: state.waveStartedAt + discoveryMs } : { state: waiting };
  }
  return {
    state: { ...state, phase: 'Progressing', wave: 0, waveStartedAt: now, failures: [] },
    event: 'preflighted',
  };
}

/** When a runtime's Pods under its revision will have run observeFor long; undefined: no Pod yet. */
function observedAt(r: RuntimeView, policy: RolloutPolicy, now: number): number | undefined {
  const first = firstPodAtOf(r, now);
  return first === undefined ? undefined : first + policy.workloads.observeForMs;
}

function soakOf(policy: RolloutPolicy, wave: number): number {
  return policy.waves[wave]?.soakMs ?? 0;
}

/** Whether a runtime's Pods under its revision failed more than the policy tolerates. */
function workloadFailed(r: RuntimeView, policy: RolloutPolicy): boolean {
  return (r.workloads?.failedPods ?? 0) > policy.workloads.toleratedFailures;
}

/** Who holds the preflight candidate now, and whose report is read often (see {@link RolloutPlan}). */
function watchedBy(
  state: RolloutState,
  active: readonly RuntimeView[],
  waves: ReadonlyMap<string, number>,
  lastWave: number,
): { preflight: ReadonlySet<string>; watch: ReadonlySet<string> } {
  const preflight = new Set<string>();
  const watch = new Set<string>();
  if (state.phase === 'Preflight') {
    for (const r of active) if ((waves.get(r.id) ?? lastWave) <= 0) preflight.add(r.id);
    return { preflight, watch: preflight };
  }
  if (state.phase !== 'Progressing' && state.phase !== 'Soaking') return { preflight, watch };
  for (const r of active) if ((waves.get(r.id) ?? lastWave) <= state.wave) watch.add(r.id);
  return { preflight, watch };
}

/** The next moment the plan would change with nothing else changing (see {@link RolloutPlan.wakeAt}). */
function wakeAtOf(state: RolloutState, policy: RolloutPolicy, now: number): number | undefined {
  if (state.phase === 'Soaking') return (state.healthySince ?? now) + soakOf(policy, state.wave);
  if (state.phase !== 'Progressing' && state.phase !== 'Preflight' && !GATED_PHASES.has(state.phase))
    return undefined;
  // Past the deadline the laggards already count as failed; until then, the deadline may halt.
  const deadline = state.waveStartedAt + policy.healthDeadlineMs;
  return deadline > now ? deadline : undefined;
}

/** The state to continue from: a new target starts a new rollout; no state adopts the target. */
function begin(input: PlanInput, events: RolloutEvent[]): RolloutState {
  const { state, target, now } = input;
  if (state === undefined) {
    // A policy starts with the next change: the revision in force when it first ran is taken as
    // healthy everywhere (it is what every runtime had before the policy existed).
    events.push('adopted');
    return {
      target,
      stable: target,
      wave: input.policy.waves.length + 1,
      waveStartedAt: now,
      phase: 'Complete',
      failures: [],
    };
  }
  if (state.target === target) return state;
  events.push('started');
  // Resuming by a new change keeps the stable revision: a halted or unfinished target never was
  // healthy everywhere.
  const preflight = input.preflightNeeded === true && input.policy.workloads.preflight;
  const started: RolloutState = {
    target,
    stable: state.phase === 'Complete' ? state.target : state.stable,
    wave: 0,
    waveStartedAt: now,
    phase: preflight ? 'Preflight' : 'Progressing',
    failures: [],
    // The state is compared whole (a restart plans the same): no undefined fields in it.
    ...(state.resumeToken !== undefined ? { resumeToken: state.resumeToken } : {}),
    ...(input.changes !== undefined ? { changes: [...input.changes] } : {}),
  };
  // The preflight goes first (it gives nobody the target): wave 0's gate follows it.
  return preflight ? started : startWave(started, 0, input, events);
}

function healthyAt(r: RuntimeView, revision: string): boolean {
  return r.current === revision && r.health === 'healthy';
}

function failuresOf(
  members: readonly RuntimeView[],
  state: RolloutState,
  policy: RolloutPolicy,
  now: number,
): RolloutFailure[] {
  const late = now - state.waveStartedAt >= policy.healthDeadlineMs;
  // Pods still under observation this long after the soak ended (the KCP's clock): the runtime's
  // report keeps moving its first Pod (a date in the future, clamped to now), so it fails itself.
  const observeDeadline =
    state.healthySince === undefined
      ? undefined
      : state.healthySince + soakOf(policy, state.wave) + policy.workloads.observeForMs;
  const out: RolloutFailure[] = [];
  for (const r of members) {
    if (r.current === state.target && workloadFailed(r, policy)) {
      const w = r.workloads;
      out.push({
        id: r.id,
        reason: `${w?.failedPods ?? 0} Pod(s) failed under set ${setOf(state.target)} for a reason the change can cause (tolerated ${policy.workloads.toleratedFailures})${w?.detail ? `: ${w.detail}` : ''}`,
      });
      continue;
    }
    if (healthyAt(r, state.target)) {
      if (
        observeDeadline !== undefined &&
        now >= observeDeadline &&
        (observedAt(r, policy, now) ?? 0) > now
      ) {
        out.push({
          id: r.id,
          reason: `its Pods under set ${setOf(state.target)} were still under observation ${Math.round(policy.workloads.observeForMs / 1000)} s after the wave soaked (first Pod reported at ${isoOf(r.workloads?.firstPodAt)})`,
        });
      }
      continue;
    }
    if (r.current === state.target && r.health === 'failed') {
      out.push({ id: r.id, reason: r.reason ?? 'failed' });
    } else if (late) {
      out.push({
        id: r.id,
        reason: `not healthy at ${state.target} within ${Math.round(policy.healthDeadlineMs / 1000)} s${r.reason ? `: ${r.reason}` : ''}`,
      });
    }
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

function desiredOf(r: RuntimeView, wave: number, state: RolloutState, policy: RolloutPolicy): string {
  if (state.phase === 'Halted') {
    // Only halting: what already has the target keeps it, nobody else gets it.
    return !policy.autoRollback && r.current === state.target ? state.target : state.stable;
  }
  // Checking the target's images: nobody has it yet.
  if (state.phase === 'Preflight') return state.stable;
  // Wave state.wave waits at its gate: only the waves before it have the target.
  const started = GATED_PHASES.has(state.phase) ? wave < state.wave : wave <= state.wave;
  return r.excluded !== true && started ? state.target : state.stable;
}

function waveName(policy: RolloutPolicy, wave: number): string {
  return policy.waves[wave]?.name ?? 'rest';
}

function describe(
  state: RolloutState,
  policy: RolloutPolicy,
  active: readonly RuntimeView[],
  waves: ReadonlyMap<string, number>,
  now: number,
  decisions: Decisions,
): string {
  const total = policy.waves.length + 1;
  if (state.phase === 'Halted') return `halted: ${state.haltReason ?? ''}`;
  if (GATED_PHASES.has(state.phase)) {
    const started = active.filter((r) => (waves.get(r.id) ?? policy.waves.length) < state.wave);
    const healthy = started.filter((r) => healthyAt(r, state.target)).length;
    const approval =
      needsApproval(policy, state, state.wave) && !approvalOf(state, decisions, policy, state.wave);
    const why = [
      ...(decisions.paused
        ? [`paused by ${decisions.paused.by} at ${isoOf(decisions.paused.at)} (a resume lets it start)`]
        : []),
      ...(approval ? [`awaiting approval of ${state.target} (it changes ${changesOf(state)})`] : []),
    ].join('; ');
    const failed = shortOfHalt(state, policy, started.length);
    return `wave ${state.wave + 1}/${total} (${waveName(policy, state.wave)}) waits since ${isoOf(state.waveStartedAt)}: ${why}; the waves before it: ${healthy}/${started.length} healthy at ${state.target}${failed}`;
  }
  if (state.phase === 'Preflight') {
    const set = setOf(state.target);
    const members = active.filter((r) => (waves.get(r.id) ?? policy.waves.length) <= 0);
    const checking = members.filter((r) => r.workloads !== undefined);
    const done = checking.filter((r) => r.preflight?.set === set && r.preflight.done).length;
    const cannot = members.filter((r) => r.workloads === undefined).map((r) => r.id);
    const below =
      state.failures.length > 0
        ? `; images missing or refused on ${list(state.failures.map((f) => f.id))} (a halt needs ${haltMinimum(policy, members.length)} runtimes)`
        : '';
    return (
      `preflight of set ${set} on wave ${waveName(policy, 0)}: ${done}/${checking.length} checked` +
      (cannot.length > 0 ? `; not checking (webhook reports no workloads): ${list(cannot)}` : '') +
      below
    );
  }
  const started = active.filter((r) => (waves.get(r.id) ?? policy.waves.length) <= state.wave);
  // Said so: a runtime counted healthy without a Pod under the target showed nothing about it.
  const noPods = started
    .filter(
      (r) => healthyAt(r, state.target) && r.workloads !== undefined && r.workloads.firstPodAt === undefined,
    )
    .map((r) => r.id);
  const unseen =
    noPods.length > 0 ? `; no Pod under the revision (healthy once its wave soaked): ${list(noPods)}` : '';
  const failed = shortOfHalt(state, policy, started.length);
  if (state.phase === 'Complete') return `complete: ${state.target} on every wave${unseen}${failed}`;
  const healthy = started.filter((r) => healthyAt(r, state.target)).length;
  const where = `wave ${state.wave + 1}/${total} (${waveName(policy, state.wave)}): ${healthy}/${started.length} healthy at ${state.target}`;
  const observing = started
    .filter((r) => healthyAt(r, state.target) && (observedAt(r, policy, now) ?? 0) > now)
    .map((r) => r.id);
  const watching = observing.length > 0 ? `; Pods under observation: ${list(observing)}` : '';
  return `${state.phase === 'Soaking' ? 'soaking' : 'progressing'}, ${where}${watching}${unseen}${failed}`;
}

/** What a target changes, for people. */
function changesOf(state: RolloutState): string {
  if (state.changes === undefined) return 'what, not known';
  return state.changes.length > 0 ? state.changes.join(', ') : 'no source';
}

/** A reported time for people (a tenant's number: never throws). */
function isoOf(ms: number | undefined): string {
  const t = new Date(ms ?? Number.NaN);
  return Number.isNaN(t.getTime()) ? 'no valid time' : t.toISOString();
}

/** The failures counted short of a halt, and when the rollout would halt (for the message). */
function shortOfHalt(state: RolloutState, policy: RolloutPolicy, members: number): string {
  if (state.failures.length === 0) return '';
  const at = Math.max(policy.failureThreshold + 1, haltMinimum(policy, members));
  const when = Number.isFinite(at) ? `halts at ${at} failed runtimes` : 'this policy never halts';
  return `; failed, counted against the halt (${when}): ${list(state.failures.map((f) => f.id))}`;
}

/** A few IDs, and how many more. */
function list(ids: readonly string[]): string {
  const shown = ids.slice(0, 10).join(', ');
  return ids.length > 10 ? `${shown} and ${ids.length - 10} more` : shown;
}
