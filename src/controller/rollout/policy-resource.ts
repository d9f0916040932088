/**
 * Between the RolloutPolicy custom resource and the planner's types (pure): the spec becomes a
 * policy, the status holds the rollout's state.
 */
import { parseGoDuration } from '../../api/go-duration.js';
import type { RolloutPolicyResource, RolloutPolicyStatus } from '../../api/rollout-policy.js';
import {
  DEFAULT_MIN_FAILED_RUNTIMES,
  DEFAULT_ROLLOUT_POLICY,
  DEFAULT_WORKLOAD_GATE,
  RolloutPolicyError,
  validatePolicy,
  type RolloutPolicy,
} from './rollout-policy.js';
import type { RolloutState } from './rollout-state.js';

const msOf = (text: string | undefined, fallbackMs: number, field: string): number => {
  if (text === undefined) return fallbackMs;
  try {
    return Number(parseGoDuration(text) / 1_000_000n);
  } catch (cause) {
    throw new RolloutPolicyError(`rollout policy: ${field}: ${String(cause)}`, { cause });
  }
};

/**
 * The policy a RolloutPolicy asks for, or the default one and why the spec was refused;
 * `autoRollback: false` (the controller's `--no-auto-rollback`) wins over the spec.
 */
export function policyOf(
  resource: RolloutPolicyResource | undefined,
  options: { readonly autoRollback: boolean },
): { policy: RolloutPolicy; problem?: string } {
  if (resource === undefined) {
    return { policy: { ...DEFAULT_ROLLOUT_POLICY, autoRollback: options.autoRollback } };
  }
  const s = resource.spec;
  try {
    const policy = validatePolicy({
      waves: s.waves.map((w, i) => ({
        name: w.name,
        selector: w.selector,
        percent: w.percent,
        soakMs: msOf(w.soak, 0, `waves[${i}].soak`),
      })),
      failureThreshold: s.failureThreshold ?? 0,
      minFailedRuntimes: s.minFailedRuntimes ?? DEFAULT_MIN_FAILED_RUNTIMES,
      healthDeadlineMs: msOf(s.healthDeadline, DEFAULT_ROLLOUT_POLICY.healthDeadlineMs, 'healthDeadline'),
      autoRollback: options.autoRollback && s.autoRollback !== false,
      workloads: {
        toleratedFailures: s.workloads?.toleratedFailures ?? DEFAULT_WORKLOAD_GATE.toleratedFailures,
        observeForMs: msOf(
          s.workloads?.observeFor,
          DEFAULT_WORKLOAD_GATE.observeForMs,
          'workloads.observeFor',
        ),
        preflight: s.workloads?.preflight ?? DEFAULT_WORKLOAD_GATE.preflight,
      },
    });
    return { policy };
  } catch (error) {
    // A refused spec falls back to the default policy, saying why; anything else is a bug.
    if (!(error instanceof RolloutPolicyError)) throw error;
    return {
      policy: { ...DEFAULT_ROLLOUT_POLICY, autoRollback: options.autoRollback },
      problem: error.message,
    };
  }
}

const time = (iso: string | undefined): number | undefined => {
  if (iso === undefined) return undefined;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? undefined : t;
};

/** The rollout state persisted in a policy's status; undefined before its first rollout. */
export function stateOf(status: RolloutPolicyStatus | undefined): RolloutState | undefined {
  if (
    status?.target === undefined ||
    status.stable === undefined ||
    status.phase === undefined ||
    status.wave === undefined
  )
    return undefined;
  return {
    target: status.target,
    stable: status.stable,
    wave: status.wave,
    waveStartedAt: time(status.waveStartedAt) ?? 0,
    healthySince: time(status.healthySince),
    phase: status.phase,
    haltReason: status.haltReason,
    failures: (status.failures ?? []).map((f) => ({ id: f.runtime, reason: f.reason })),
    resumeToken: status.resumeToken,
  };
}

/** The status that persists `state` (and says where the rollout stands). */
export function statusOf(input: {
  readonly state: RolloutState;
  readonly policy: RolloutPolicy;
  readonly generation: number | undefined;
  readonly message: string;
  readonly problem?: string;
  readonly runtimes: { total: number; atTarget: number; healthy: number };
}): RolloutPolicyStatus {
  const { state, policy } = input;
  const waveName = state.wave > policy.waves.length ? 'done' : (policy.waves[state.wave]?.name ?? 'rest');
  return {
    observedGeneration: input.generation,
    phase: state.phase,
    target: state.target,
    stable: state.stable,
    wave: state.wave,
    waveName,
    waveStartedAt: new Date(state.waveStartedAt).toISOString(),
    healthySince: state.healthySince === undefined ? undefined : new Date(state.healthySince).toISOString(),
    haltReason: state.haltReason?.slice(0, 4000),
    resumeToken: state.resumeToken,
    message: input.message.slice(0, 4000),
    policyProblem: input.problem?.slice(0, 4000),
    failures: state.failures.map((f) => ({ runtime: f.id, reason: f.reason.slice(0, 2000) })),
    runtimes: input.runtimes,
  };
}
