/**
 * The ValidatingAdmissionPolicy that narrows the ConfigMaps the webhook's ServiceAccount may
 * create (pure; docs/admission-policy.md, "Per runtime: who installs it").
 *
 * The runtime agent writes the admission policy's parameters, and in direct mode the webhook
 * writes its status report: both by server-side apply, whose create the API server authorizes
 * with the object's name. Direct mode's Role grants a ConfigMap create by any name (a POST has no
 * name to authorize). This policy, matched to that ServiceAccount's user name alone, lets a
 * ConfigMap create through only for those two names in the webhook's own namespace.
 *
 * The admission policy and its binding themselves cannot be narrowed here: the API server exempts
 * MutatingAdmissionPolicies, ValidatingAdmissionPolicies and their bindings from admission
 * policies. RBAC's `resourceNames` bounds them (./webhook-rbac.ts `admissionPolicyRules`).
 */
import type { V1Validation } from '@kubernetes/client-node';
import { WEBHOOK_SERVICE_ACCOUNT } from '../api/runtime-names.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../api/webhook-status.js';
import { ADMISSION_POLICY_NAME } from './admission-policy.js';
import { celList, celString, webhookUserName, type WebhookWritePolicy } from './webhook-write-policy.js';

/** The policy and its binding share this name. */
export const WEBHOOK_ADMISSION_POLICY_POLICY = 'rt-bootstrapper-webhook-admission-policies';

/**
 * Renders the policy and its binding for the webhook in `namespace`, which is also where the
 * parameters live (pure); `labels` are the labels of every object we render.
 */
export function renderWebhookAdmissionPolicyRights(
  namespace: string,
  labels: Readonly<Record<string, string>>,
): WebhookWritePolicy {
  const who = `rt-bootstrapper's ServiceAccount ${WEBHOOK_SERVICE_ACCOUNT}`;
  const validations: V1Validation[] = [
    {
      expression:
        `request.namespace == ${celString(namespace)} && has(object.metadata.name) && ` +
        `object.metadata.name in ${celList([WEBHOOK_STATUS_CONFIG_MAP, ADMISSION_POLICY_NAME])}`,
      message: `${who} may create only its status report and the admission policy's parameters, in ${namespace}`,
      reason: 'Forbidden',
    },
  ];
  return {
    policy: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: WEBHOOK_ADMISSION_POLICY_POLICY, labels: { ...labels } },
      spec: {
        // An expression that cannot be evaluated refuses the write: only our ServiceAccount's
        // writes are matched, so nobody else is ever refused by this policy.
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['*'], operations: ['CREATE'], resources: ['configmaps'] },
          ],
        },
        matchConditions: [
          {
            name: 'webhook-service-account',
            expression: `request.userInfo.username == ${celString(webhookUserName(namespace))}`,
          },
        ],
        validations,
      },
    },
    binding: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: WEBHOOK_ADMISSION_POLICY_POLICY, labels: { ...labels } },
      spec: { policyName: WEBHOOK_ADMISSION_POLICY_POLICY, validationActions: ['Deny'] },
    },
  };
}
