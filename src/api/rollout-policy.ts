import type { V1ObjectMeta } from '@kubernetes/client-node';
import { RTB_GROUP, RTB_VERSION } from './runtime-bootstrapper.js';

/** Plural resource name of the RolloutPolicy. */
export const ROLLOUT_POLICY_PLURAL = 'rolloutpolicies';
/** The policy the controller reads unless `--rollout-policy` names another. */
export const DEFAULT_ROLLOUT_POLICY_NAME = 'default';
/** Annotation on the policy: a new value resumes a halted rollout (once per value). */
export const RESUME_ANNOTATION = 'rt-bootstrapper.kyma-project.io/resume';

/** A wave as written in the CR. */
export interface RolloutWaveSpec {
  name: string;
  selector?: {
    matchLabels?: Record<string, string>;
    matchExpressions?: {
      key: string;
      operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
      values?: string[];
    }[];
  };
  percent?: number;
  /** Go duration. */
  soak?: string;
  /**
   * The wave starts only once a person approved it for the target (`rtb rollout approve`): for
   * every change, or, with `sources`, only for a target that changes one of them.
   */
  approval?: { sources?: RolloutSourceChange[] };
}

/** What a target can change against the stable revision (what an approval may be asked for). */
export type RolloutSourceChange =
  'pullCredentials' | 'overrides' | 'trustBundle' | 'config' | 'webhookRelease';

/** `spec` of a RolloutPolicy. */
export interface RolloutPolicySpec {
  waves: RolloutWaveSpec[];
  failureThreshold?: number;
  /**
   * Failed runtimes a halt needs besides more than `failureThreshold` (default 2; capped at the
   * runtimes of the waves started so far): one runtime's report never halts the fleet by itself.
   */
  minFailedRuntimes?: number;
  /** Go duration. */
  healthDeadline?: string;
  autoRollback?: boolean;
  /** How the Pods changed under a revision count (docs/rollout.md, workload health). */
  workloads?: {
    /** Pods per runtime that may fail for a reason the change can cause (default 0). */
    toleratedFailures?: number;
    /** Go duration Pods must have run under the revision before a runtime counts healthy (default 5m). */
    observeFor?: string;
    /** Check a target with new overrides or pull Secret on wave 0's runtimes first (default true). */
    preflight?: boolean;
  };
}

/** `status` of a RolloutPolicy: the rollout's persisted state (docs/rollout.md). */
export interface RolloutPolicyStatus {
  observedGeneration?: number;
  phase?: 'Preflight' | 'Progressing' | 'AwaitingApproval' | 'Paused' | 'Soaking' | 'Halted' | 'Complete';
  target?: string;
  stable?: string;
  wave?: number;
  waveName?: string;
  waveStartedAt?: string;
  healthySince?: string;
  haltReason?: string;
  resumeToken?: string;
  message?: string;
  /** Why the spec could not be used (the default policy is in force meanwhile). */
  policyProblem?: string;
  failures?: { runtime: string; reason: string }[];
  /** What the target changes against the stable revision (absent: not known; every approval applies). */
  changes?: RolloutSourceChange[];
  /** People's decisions that acted on the target: who approved which wave, or rejected it, and when. */
  decisions?: RolloutDecisionRecord[];
  /** Who paused the rollout and when (no wave starts until a resume). */
  paused?: { user: string; at: string; decision: string };
  /** The wave that waits to start (phases AwaitingApproval and Paused), since when, and for what. */
  awaiting?: { wave: string; since: string; approval: boolean; paused: boolean };
  /** `Approved` (a wave waits for an approval, or was approved or rejected), `Paused`. */
  conditions?: RolloutPolicyCondition[];
  runtimes?: { total: number; atTarget: number; healthy: number };
}

/** A decision on the target that acted, as the status records it. */
export interface RolloutDecisionRecord {
  wave: string;
  decision: 'Approved' | 'Rejected';
  /** The user as the API server authenticated the request that created the RolloutDecision. */
  user: string;
  /** When the API server stored the RolloutDecision. */
  at: string;
  /** The RolloutDecision's name. */
  name: string;
}

/** A condition of a RolloutPolicy (metav1.Condition). */
export interface RolloutPolicyCondition {
  type: 'Approved' | 'Paused';
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** The cluster-scoped custom resource. */
export interface RolloutPolicyResource {
  apiVersion?: string;
  kind?: string;
  metadata: V1ObjectMeta & { name: string };
  spec: RolloutPolicySpec;
  status?: RolloutPolicyStatus;
}

/** A RolloutPolicy with `spec`, named `name` (the one the controller reads unless told another). */
export function newRolloutPolicy(
  spec: RolloutPolicySpec,
  name: string = DEFAULT_ROLLOUT_POLICY_NAME,
): RolloutPolicyResource {
  return { apiVersion: `${RTB_GROUP}/${RTB_VERSION}`, kind: 'RolloutPolicy', metadata: { name }, spec };
}

/** The API path of the RolloutPolicy `name` (or of all of them). */
export function rolloutPolicyPath(name?: string): string {
  const base = `/apis/${RTB_GROUP}/${RTB_VERSION}/${ROLLOUT_POLICY_PLURAL}`;
  return name === undefined ? base : `${base}/${name}`;
}
