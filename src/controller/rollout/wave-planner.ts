import type { RolloutPolicy } from './rollout-policy.js';
import { FAILURES_KEPT, type RolloutFailure, type RolloutState } from './rollout-state.js';
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
  /** The policy's resume annotation, if set: a value not acted on yet resumes a halted rollout. */
  readonly resumeToken?: string;
}

/** What happened in this step (for events, logs and metrics). */
export type RolloutEvent = 'started' | 'adopted' | 'advanced' | 'halted' | 'resumed' | 'completed';

/** The planner's answer. */
export interface RolloutPlan {
  readonly state: RolloutState;
  /** The revision each runtime must have now. */
  readonly desired: ReadonlyMap<string, string>;
  /** Each runtime's wave index. */
  readonly waves: ReadonlyMap<string, number>;
  /** Runtimes on the target that must go back to the stable revision now. */
  readonly rollback: readonly string[];
  readonly events: readonly RolloutEvent[];
  /** One line: where the rollout stands and why. */
  readonly message: string;
  /**
   * When time alone changes this plan (a soak ends, a health deadline passes), epoch ms; undefined
   * when only a change of the runtimes, the policy or the target can.
   */
  readonly wakeAt?: number;
}

/**
 * Decides which revision each runtime gets (pure). Wave n+1 starts only when every runtime of the
 * waves started so far is healthy at the target (or counted failed within the threshold) and the
 * wave soaked; more failures than the threshold halt it, and a halt puts the runtimes on the
 * target back on the stable revision unless auto-rollback is off. A runtime not healthy within
 * the health deadline of its wave's start counts as failed, so no runtime blocks forever.
 */
export function planRollout(input: PlanInput): RolloutPlan {
  const { policy, runtimes, now } = input;
  const events: RolloutEvent[] = [];
  const active = runtimes.filter((r) => r.excluded !== true);
  const waves = assignWaves(policy.waves, active);
  const lastWave = policy.waves.length;
  let state = begin(input, events);
  if (input.resumeToken !== undefined && input.resumeToken !== state.resumeToken) {
    const halted = state.phase === 'Halted';
    state = { ...state, resumeToken: input.resumeToken };
    if (halted) {
      const { haltReason: _dropped, ...rest } = state;
      state = { ...rest, phase: 'Progressing', waveStartedAt: now, failures: [] };
      events.push('resumed');
    }
  }
  while (state.phase === 'Progressing' || state.phase === 'Soaking') {
    const members = active.filter((r) => (waves.get(r.id) ?? lastWave) <= state.wave);
    const failures = failuresOf(members, state, policy, now);
    if (failures.length > policy.failureThreshold) {
      const first = failures[0];
      state = {
        ...state,
        phase: 'Halted',
        haltReason: `${failures.length} runtime(s) failed in wave ${waveName(policy, state.wave)} (threshold ${policy.failureThreshold})${first ? `; ${first.id}: ${first.reason}` : ''}`,
        failures: failures.slice(0, FAILURES_KEPT),
      };
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
    const soak = policy.waves[state.wave]?.soakMs ?? 0;
    if (now - healthySince < soak) {
      state = { ...state, phase: 'Soaking', healthySince, failures: failures.slice(0, FAILURES_KEPT) };
      break;
    }
    const { healthySince: _done, ...rest } = state;
    state = { ...rest, wave: state.wave + 1, waveStartedAt: now, failures: failures.slice(0, FAILURES_KEPT) };
    events.push('advanced');
    if (state.wave > lastWave) {
      state = { ...state, phase: 'Complete', stable: state.target };
      events.push('completed');
    }
  }
  const desired = new Map<string, string>();
  const rollback: string[] = [];
  for (const r of runtimes) {
    const want = desiredOf(r, waves.get(r.id) ?? lastWave, state, policy);
    desired.set(r.id, want);
    if (r.current === state.target && want !== state.target) rollback.push(r.id);
  }
  const wakeAt = wakeAtOf(state, policy, now);
  return {
    state,
    desired,
    waves,
    rollback,
    events,
    message: describe(state, policy, active, waves),
    ...(wakeAt !== undefined ? { wakeAt } : {}),
  };
}

/** The next moment the plan would change with nothing else changing (see {@link RolloutPlan.wakeAt}). */
function wakeAtOf(state: RolloutState, policy: RolloutPolicy, now: number): number | undefined {
  if (state.phase === 'Soaking') return (state.healthySince ?? now) + (policy.waves[state.wave]?.soakMs ?? 0);
  if (state.phase !== 'Progressing') return undefined;
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
  return {
    target,
    stable: state.phase === 'Complete' ? state.target : state.stable,
    wave: 0,
    waveStartedAt: now,
    phase: 'Progressing',
    failures: [],
    ...(state.resumeToken !== undefined ? { resumeToken: state.resumeToken } : {}),
  };
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
  const out: RolloutFailure[] = [];
  for (const r of members) {
    if (healthyAt(r, state.target)) continue;
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
  return r.excluded !== true && wave <= state.wave ? state.target : state.stable;
}

function waveName(policy: RolloutPolicy, wave: number): string {
  return policy.waves[wave]?.name ?? 'rest';
}

function describe(
  state: RolloutState,
  policy: RolloutPolicy,
  active: readonly RuntimeView[],
  waves: ReadonlyMap<string, number>,
): string {
  const total = policy.waves.length + 1;
  if (state.phase === 'Complete') return `complete: ${state.target} on every wave`;
  if (state.phase === 'Halted') return `halted: ${state.haltReason ?? ''}`;
  const members = active.filter((r) => (waves.get(r.id) ?? policy.waves.length) <= state.wave);
  const healthy = members.filter((r) => healthyAt(r, state.target)).length;
  const where = `wave ${state.wave + 1}/${total} (${waveName(policy, state.wave)}): ${healthy}/${members.length} healthy at ${state.target}`;
  return state.phase === 'Soaking' ? `soaking, ${where}` : `progressing, ${where}`;
}
