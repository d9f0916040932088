import type { RolloutSourceChange } from '../../api/rollout-policy.js';
import type { LabelSelector } from './label-selector.js';

/** What a target can change against the stable revision (docs/rollout.md, approvals). */
export type SourceChange = RolloutSourceChange;

/** Every kind of change, in the order the status lists them. */
export const SOURCE_CHANGES: readonly SourceChange[] = [
  'pullCredentials',
  'overrides',
  'trustBundle',
  'config',
  'webhookRelease',
];

/** A wave that starts only once approved for the target. */
export interface ApprovalGate {
  /** Only a target that changes one of these needs the approval; undefined: every target does. */
  readonly sources?: readonly SourceChange[];
}

/**
 * One wave: the RuntimeBootstrappers its selector matches and/or a percentage of those no
 * earlier wave took, then a soak time before the next wave starts.
 */
export interface RolloutWave {
  readonly name: string;
  /** RuntimeBootstrappers whose labels match (and no earlier wave took). */
  readonly selector?: LabelSelector;
  /** This share (0–100) of the runtimes no earlier wave took, chosen by a hash of the runtime ID. */
  readonly percent?: number;
  /** How long the wave must stay healthy before the next one starts (ms). */
  readonly soakMs: number;
  /** The wave waits for a person's approval before it starts (phase AwaitingApproval). */
  readonly approval?: ApprovalGate;
}

/** How the Pods changed under a revision count in its rollout (DESIGN §11). */
export interface WorkloadGate {
  /**
   * Pods per runtime that may fail under the target for a reason the change can cause (the
   * webhook's `failedPods`) while its wave is under way; one more and the runtime failed.
   */
  readonly toleratedFailures: number;
  /**
   * How long Pods must have run under the target on a runtime (from its first one) before it counts
   * healthy; a runtime where no Pod was created under it counts healthy when its wave's soak ends.
   */
  readonly observeForMs: number;
  /**
   * Check a target whose overrides or pull Secret differ from the stable revision's on the first
   * wave's runtimes before any of them gets it (phase Preflight).
   */
  readonly preflight: boolean;
}

/** The workload gate of a policy that does not say: no failure tolerated, five minutes, preflight on. */
export const DEFAULT_WORKLOAD_GATE: WorkloadGate = {
  toleratedFailures: 0,
  observeForMs: 5 * 60_000,
  preflight: true,
};

/** How a new revision (source set and webhook release) reaches the fleet. */
export interface RolloutPolicy {
  /** Ordered waves; runtimes none of them takes form a last wave of their own. */
  readonly waves: readonly RolloutWave[];
  /** Failed runtimes tolerated (over all waves started so far) before the rollout halts. */
  readonly failureThreshold: number;
  /**
   * Failed runtimes a halt needs besides more than {@link failureThreshold}: a runtime's report
   * speaks for that runtime only, so one runtime's admin cannot halt (and roll back) the fleet.
   * Capped at the runtimes of the waves started so far, so a one-runtime canary wave halts on 1.
   */
  readonly minFailedRuntimes: number;
  /** A runtime not healthy this long after its wave started counts as failed (never blocks forever). */
  readonly healthDeadlineMs: number;
  /** On a halt, put the runtimes that got the new revision back on the last healthy one. */
  readonly autoRollback: boolean;
  readonly workloads: WorkloadGate;
}

/** Failed runtimes a halt needs by default (DESIGN §14: by default, more than one runtime). */
export const DEFAULT_MIN_FAILED_RUNTIMES = 2;

/** A rollout policy's problem (the status of the policy says it; the default is used meanwhile). */
export class RolloutPolicyError extends Error {
  override readonly name = 'RolloutPolicyError';
}

/**
 * Today's behaviour for those who ask for nothing: one wave of everything, no soak, and no halt
 * (an unlimited threshold), so every runtime gets every new revision at once.
 */
export const DEFAULT_ROLLOUT_POLICY: RolloutPolicy = {
  waves: [{ name: 'all', percent: 100, soakMs: 0 }],
  failureThreshold: Number.POSITIVE_INFINITY,
  minFailedRuntimes: DEFAULT_MIN_FAILED_RUNTIMES,
  healthDeadlineMs: 10 * 60_000,
  autoRollback: true,
  // No policy, no gate: failures are reported, never counted, and nothing waits.
  workloads: { toleratedFailures: Number.POSITIVE_INFINITY, observeForMs: 0, preflight: false },
};

/** Checks a policy's numbers (pure); throws {@link RolloutPolicyError} naming the first bad field. */
export function validatePolicy(policy: RolloutPolicy): RolloutPolicy {
  const bad = (what: string): never => {
    throw new RolloutPolicyError(`rollout policy: ${what}`);
  };
  if (policy.waves.length === 0) bad('waves: at least one wave');
  const names = new Set<string>();
  policy.waves.forEach((w, i) => {
    if (!w.name) bad(`waves[${i}].name: required`);
    if (names.has(w.name)) bad(`waves[${i}].name: "${w.name}" repeated`);
    names.add(w.name);
    if (w.selector === undefined && w.percent === undefined) bad(`waves[${i}]: a selector or a percent`);
    if (w.percent !== undefined && !(w.percent >= 0 && w.percent <= 100))
      bad(`waves[${i}].percent: between 0 and 100`);
    if (!(w.soakMs >= 0)) bad(`waves[${i}].soak: not negative`);
  });
  if (!(policy.failureThreshold >= 0)) bad('failureThreshold: not negative');
  if (!(Number.isInteger(policy.minFailedRuntimes) && policy.minFailedRuntimes >= 1))
    bad('minFailedRuntimes: a whole number of at least 1');
  if (!(policy.healthDeadlineMs > 0)) bad('healthDeadline: positive');
  if (!(policy.workloads.toleratedFailures >= 0)) bad('workloads.toleratedFailures: not negative');
  if (!(policy.workloads.observeForMs >= 0)) bad('workloads.observeFor: not negative');
  return policy;
}
