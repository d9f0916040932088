/**
 * What makes a RolloutDecision a person's own word (docs/rollout.md, approvals): a
 * ValidatingAdmissionPolicy that admits one only when `spec.user` is the user the API server
 * authenticated for the request, and a ClusterRole that grants deciding on rollouts without the
 * right to edit a RolloutPolicy. Rendered with the controller in direct mode.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';
import { ROLLOUT_DECISION_PLURAL } from '../api/rollout-decision.js';
import { RTB_GROUP } from '../api/runtime-bootstrapper.js';

/** Name of the admission policy and its binding. */
export const ROLLOUT_DECISIONS_POLICY = 'rt-bootstrapper-rollout-decisions';
/** Name of the ClusterRole that grants `rtb rollout approve|reject|pause|resume` (bind it to people). */
export const ROLLOUT_OPERATOR_ROLE = 'rt-bootstrapper-rollout-operator';

/** The admission policy, its binding and the operators' ClusterRole. */
export function renderRolloutDecisionObjects(): KubernetesObject[] {
  const labels = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
  return [
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: ROLLOUT_DECISIONS_POLICY, labels: { ...labels } },
      spec: {
        // No decision without the check: who decided is what the status records.
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [RTB_GROUP],
              apiVersions: ['*'],
              // The CRD keeps spec immutable, so the check at creation holds for good.
              operations: ['CREATE'],
              resources: [ROLLOUT_DECISION_PLURAL],
            },
          ],
        },
        validations: [
          {
            expression: 'object.spec.user == request.userInfo.username',
            messageExpression:
              "'spec.user must be the requesting user, ' + request.userInfo.username + ' (rtb rollout writes it)'",
            reason: 'Forbidden',
          },
        ],
      },
    } as KubernetesObject,
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: ROLLOUT_DECISIONS_POLICY, labels: { ...labels } },
      spec: { policyName: ROLLOUT_DECISIONS_POLICY, validationActions: ['Deny'] },
    } as KubernetesObject,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: ROLLOUT_OPERATOR_ROLE, labels: { ...labels } },
      rules: [
        {
          apiGroups: [RTB_GROUP],
          resources: [ROLLOUT_DECISION_PLURAL],
          verbs: ['create', 'get', 'list', 'watch'],
        },
        { apiGroups: [RTB_GROUP], resources: ['rolloutpolicies'], verbs: ['get', 'list', 'watch'] },
        // `rtb rollout` asks the API server who the caller is (kubectl auth whoami does the same).
        { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews'], verbs: ['create'] },
      ],
    } as KubernetesObject,
  ];
}
