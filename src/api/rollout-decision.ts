import type { V1ObjectMeta } from '@kubernetes/client-node';
import { RTB_GROUP, RTB_VERSION } from './runtime-bootstrapper.js';

/**
 * A person's word on a rollout (docs/rollout.md, approvals): `rtb rollout approve|reject|pause|resume`
 * creates one. Its own kind, so RBAC grants deciding (create) apart from editing a policy's spec;
 * immutable, and admitted only with `spec.user` = the requesting user (the ValidatingAdmissionPolicy
 * of ../render/rollout-decisions.ts), so who decided cannot be forged by whoever may decide.
 */
export const ROLLOUT_DECISION_PLURAL = 'rolloutdecisions';
export const ROLLOUT_DECISION_KIND = 'RolloutDecision';

/** What a decision does. */
export type RolloutDecisionAction = 'Approve' | 'Reject' | 'Pause' | 'Resume';

/** `spec` of a RolloutDecision. */
export interface RolloutDecisionSpec {
  /** The RolloutPolicy decided on. */
  policy: string;
  action: RolloutDecisionAction;
  /** The revision decided on (Approve, Reject): a decision never acts on another one. */
  target?: string;
  /** The wave approved (Approve). */
  wave?: string;
  /** The requesting user's name as the API server authenticated it (checked on admission). */
  user: string;
  reason?: string;
}

/** The cluster-scoped custom resource. */
export interface RolloutDecisionResource {
  apiVersion?: string;
  kind?: string;
  metadata: V1ObjectMeta & { name: string };
  spec: RolloutDecisionSpec;
}

/** The API path of the RolloutDecision `name` (or of all of them). */
export function rolloutDecisionPath(name?: string): string {
  const base = `/apis/${RTB_GROUP}/${RTB_VERSION}/${ROLLOUT_DECISION_PLURAL}`;
  return name === undefined ? base : `${base}/${name}`;
}

/** A decision named `name` (owned by the policy, so it goes with it when `policyUid` is given). */
export function newRolloutDecision(
  name: string,
  spec: RolloutDecisionSpec,
  policyUid?: string,
): RolloutDecisionResource {
  return {
    apiVersion: `${RTB_GROUP}/${RTB_VERSION}`,
    kind: ROLLOUT_DECISION_KIND,
    metadata: {
      name,
      ...(policyUid !== undefined
        ? {
            ownerReferences: [
              {
                apiVersion: `${RTB_GROUP}/${RTB_VERSION}`,
                kind: 'RolloutPolicy',
                name: spec.policy,
                uid: policyUid,
              },
            ],
          }
        : {}),
    },
    spec,
  };
}
