/** What the wave planner's tests start from: a fleet of runtime views and the usual rollout states. */
import type { RolloutState } from '../../src/controller/rollout/rollout-state.js';
import type { RuntimeView } from '../../src/controller/rollout/wave-planner.js';

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
