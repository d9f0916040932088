import type { SourceChange } from './rollout-policy.js';

/**
 * Where a rollout stands. `Preflight`: the first wave's runtimes check the target's images before
 * anyone gets it (wave 0, not started yet; `waveStartedAt` is when the preflight started).
 * `AwaitingApproval` and `Paused`: wave `wave` waits to start, for a person's approval or for a
 * resume (the waves before it have the target; `waveStartedAt` is when the wait began).
 */
export type RolloutPhase =
  'Preflight' | 'Progressing' | 'AwaitingApproval' | 'Paused' | 'Soaking' | 'Halted' | 'Complete';

/** The phases in which wave `wave` has not started: it waits at its gate. */
export const GATED_PHASES: ReadonlySet<RolloutPhase> = new Set(['AwaitingApproval', 'Paused']);

/** A person's decision that acted on the target (the status records who and when). */
export interface DecisionRecord {
  readonly wave: string;
  readonly decision: 'Approved' | 'Rejected';
  /** The user the API server authenticated for the RolloutDecision's creation. */
  readonly by: string;
  /** When the API server stored the RolloutDecision (epoch ms). */
  readonly at: number;
  /** The RolloutDecision's name. */
  readonly name: string;
}

/** A runtime that failed its wave, and why (shown in the policy's status and `rtb status`). */
export interface RolloutFailure {
  readonly id: string;
  readonly reason: string;
}

/**
 * A rollout's state: all a controller needs to continue where another one (or itself before a
 * restart) left off. Kept on the KCP in the RolloutPolicy's status.
 */
export interface RolloutState {
  /** The revision being rolled out. */
  readonly target: string;
  /** The last revision that was healthy everywhere: what runtimes outside started waves get. */
  readonly stable: string;
  /** Index of the wave in progress (`waves.length` is the implicit last wave; beyond it: complete). */
  readonly wave: number;
  /**
   * When the wave in progress started (epoch ms): the health deadline counts from here (in phase
   * Preflight, the preflight's deadline).
   */
  readonly waveStartedAt: number;
  /** Since when every runtime of the started waves was healthy (epoch ms): the soak. */
  readonly healthySince?: number;
  readonly phase: RolloutPhase;
  /** Why the rollout halted (Halted only). */
  readonly haltReason?: string;
  /** Failing runtimes of the started waves (at most a few are kept). */
  readonly failures: readonly RolloutFailure[];
  /** The resume annotation's value last acted on, so one value resumes once. */
  readonly resumeToken?: string;
  /**
   * What the target changes against the stable revision, found when the rollout started;
   * undefined: not known (every approval a wave asks for applies).
   */
  readonly changes?: readonly SourceChange[];
  /** Decisions that acted on the target: approvals of its waves, a rejection. */
  readonly decisions?: readonly DecisionRecord[];
}

/** Failures kept in the state (the status stays small; the count says how many there were). */
export const FAILURES_KEPT = 20;
