/**
 * Where a rollout stands. `Preflight`: the first wave's runtimes check the target's images before
 * anyone gets it (wave 0, not started yet; `waveStartedAt` is when the preflight started).
 */
export type RolloutPhase = 'Preflight' | 'Progressing' | 'Soaking' | 'Halted' | 'Complete';

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
}

/** Failures kept in the state (the status stays small; the count says how many there were). */
export const FAILURES_KEPT = 20;
