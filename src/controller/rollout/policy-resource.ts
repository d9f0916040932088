/**
 * Between the RolloutPolicy custom resource and the planner's types (pure): the spec becomes a
 * policy, the status holds the rollout's state.
 */
import { parseGoDuration } from '../../api/go-duration.js';
import type {
  RolloutPolicyCondition,
  RolloutPolicyResource,
  RolloutPolicyStatus,
} from '../../api/rollout-policy.js';
import type { Decider } from './decisions.js';
import {
  DEFAULT_MIN_FAILED_RUNTIMES,
  DEFAULT_ROLLOUT_POLICY,
  DEFAULT_WORKLOAD_GATE,
  RolloutPolicyError,
  validatePolicy,
  type RolloutPolicy,
} from './rollout-policy.js';
import type { RolloutState } from './rollout-state.js';
import type { Awaiting } from './wave-planner.js';

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
        ...(w.approval ? { approval: w.approval.sources ? { sources: [...w.approval.sources] } : {} } : {}),
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
    ...(status.changes !== undefined ? { changes: status.changes } : {}),
    ...(status.decisions !== undefined && status.decisions.length > 0
      ? {
          decisions: status.decisions.map((d) => ({
            wave: d.wave,
            decision: d.decision,
            by: d.user,
            at: time(d.at) ?? 0,
            name: d.name,
          })),
        }
      : {}),
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
  /** Who paused the rollout, if it is paused. */
  readonly paused?: Decider;
  /** The wave waiting at its gate (the plan's). */
  readonly awaiting?: Awaiting;
  /** The status read: its conditions keep their transition times while they hold. */
  readonly previous?: RolloutPolicyStatus;
  /** Now (epoch ms): a condition's transition time when it changes. */
  readonly now?: number;
}): RolloutPolicyStatus {
  const { state, policy } = input;
  const iso = (ms: number): string => new Date(ms).toISOString();
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
    changes: state.changes === undefined ? undefined : [...state.changes],
    decisions:
      state.decisions === undefined
        ? undefined
        : state.decisions.map((d) => ({
            wave: d.wave,
            decision: d.decision,
            user: d.by,
            at: iso(d.at),
            name: d.name,
          })),
    paused:
      input.paused === undefined
        ? undefined
        : { user: input.paused.by, at: iso(input.paused.at), decision: input.paused.name },
    awaiting:
      input.awaiting === undefined
        ? undefined
        : {
            wave: input.awaiting.wave,
            since: iso(input.awaiting.since),
            approval: input.awaiting.approval,
            paused: input.awaiting.paused,
          },
    conditions: conditionsOf(input),
    runtimes: input.runtimes,
  };
}

/**
 * The policy's conditions: `Approved` once a wave of the target asks for an approval (False while
 * it waits, True once given, False when rejected), `Paused` while paused; a condition keeps its
 * transition time while its status holds.
 */
function conditionsOf(input: Parameters<typeof statusOf>[0]): RolloutPolicyCondition[] | undefined {
  const { state, generation } = input;
  const iso = (ms: number): string => new Date(ms).toISOString();
  const now = input.now ?? Date.now();
  const out: RolloutPolicyCondition[] = [];
  const add = (
    type: RolloutPolicyCondition['type'],
    status: 'True' | 'False',
    reason: string,
    message: string,
  ) => {
    const before = input.previous?.conditions?.find((c) => c.type === type);
    out.push({
      type,
      status,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
      lastTransitionTime: before?.status === status ? before.lastTransitionTime : iso(now),
      reason,
      message: message.slice(0, 1000),
    });
  };
  const rejected = state.decisions?.find((d) => d.decision === 'Rejected');
  const approved = state.decisions?.filter((d) => d.decision === 'Approved').at(-1);
  if (input.awaiting?.approval === true)
    add(
      'Approved',
      'False',
      'AwaitingApproval',
      `wave ${input.awaiting.wave} waits since ${iso(input.awaiting.since)} for an approval of ${state.target}`,
    );
  else if (rejected)
    add(
      'Approved',
      'False',
      'Rejected',
      `${state.target} rejected by ${rejected.by} at ${iso(rejected.at)} (wave ${rejected.wave})`,
    );
  else if (approved)
    add(
      'Approved',
      'True',
      'Approved',
      `wave ${approved.wave} approved by ${approved.by} at ${iso(approved.at)}`,
    );
  if (input.paused)
    add(
      'Paused',
      'True',
      'Paused',
      `paused by ${input.paused.by} at ${iso(input.paused.at)}: no wave starts until a resume`,
    );
  return out.length > 0 ? out : undefined;
}
