/** Timing of an election (client-go's defaults: 15 s, 10 s, 2 s). */
export interface LeaderElectionTiming {
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/** client-go's defaults. */
export const DEFAULT_LEADER_ELECTION_TIMING: LeaderElectionTiming = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

/** client-go's `JitterFactor`: candidates poll every `retryPeriod × [1, 2.2)`. */
export const JITTER_FACTOR = 1.2;

/** Bad timing or identity. */
export class LeaderElectionConfigError extends Error {
  override readonly name = 'LeaderElectionConfigError';
}

/** `partial` over client-go's defaults; throws {@link LeaderElectionConfigError} when it cannot be safe. */
export function electionTiming(partial: Partial<LeaderElectionTiming> = {}): LeaderElectionTiming {
  const timing = { ...DEFAULT_LEADER_ELECTION_TIMING, ...partial };
  const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = timing;
  if (!(leaseDurationMs > renewDeadlineMs))
    throw new LeaderElectionConfigError('the lease duration must be greater than the renew deadline');
  if (!(renewDeadlineMs > JITTER_FACTOR * retryPeriodMs))
    throw new LeaderElectionConfigError(
      `the renew deadline must be greater than ${JITTER_FACTOR} × the retry period`,
    );
  if (!(retryPeriodMs > 0)) throw new LeaderElectionConfigError('the retry period must be positive');
  return timing;
}
