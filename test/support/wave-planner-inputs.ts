/** What the wave planner's tests start from: a fleet of runtime views and the usual rollout states. */
import { WORKLOAD_WATCH_MS } from '../../src/controller/direct/webhook-report.js';
import type { RolloutPolicy } from '../../src/controller/rollout/rollout-policy.js';
import type { RolloutState } from '../../src/controller/rollout/rollout-state.js';
import type { PlanInput, RuntimeView } from '../../src/controller/rollout/wave-planner.js';

/**
 * The runtimes `ids`, each on `current` and healthy, those in `canaries` labelled `canary: "true"`;
 * `over` changes single runtimes.
 */
export function runtimeViews(
  ids: readonly string[],
  canaries: readonly string[],
  current: string,
  over: Record<string, Partial<RuntimeView>> = {},
): RuntimeView[] {
  return ids.map((id) => ({
    id,
    labels: canaries.includes(id) ? { canary: 'true' } : {},
    current,
    health: 'healthy' as const,
    ...over[id],
  }));
}

/** v2 rolling out from v1: wave 0 started at 0. */
export const WAVE0: RolloutState = {
  target: 'v2',
  stable: 'v1',
  wave: 0,
  waveStartedAt: 0,
  phase: 'Progressing',
  failures: [],
};

/** A completed rollout of v1 (past a canary wave and the rest). */
export const DONE_V1: RolloutState = { ...WAVE0, target: 'v1', wave: 2, phase: 'Complete' };

/**
 * The planner's input for target v2 under `policy` from `state`, at 1 s, reports read at the
 * default rate; `p` sets any field.
 */
export function planInput(
  policy: RolloutPolicy,
  runtimes: readonly RuntimeView[],
  state: RolloutState | undefined,
  p: Partial<PlanInput> = {},
): PlanInput {
  return { policy, runtimes, target: 'v2', state, now: 1_000, workloadWatchMs: WORKLOAD_WATCH_MS, ...p };
}
