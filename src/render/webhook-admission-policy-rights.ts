/**
 * The ValidatingAdmissionPolicy that narrows what the webhook's ServiceAccount may write of the
 * admission policy (pure; docs/admission-policy.md, "Per runtime: who installs it").
 *
 * The runtime agent installs the MutatingAdmissionPolicy, its binding and its parameters
 * (../runtime-agent/admission-policy/). RBAC grants get, update, patch and delete of them by name,
 * but not create: the name of a create is in the body. A policy can mutate anything it matches and
 * a binding can bind any policy, so a create right by any name would be the power to rewrite every
 * object of the cluster. This policy, matched to that ServiceAccount's user name alone, lets a
 * write through only when:
 * - a MutatingAdmissionPolicy or binding is ours by name (`rt-bootstrapper-pod-mutation`);
 * - the policy matches nothing but the creation of Pods, with ConfigMap parameters;
 * - the binding binds our policy to our parameters (by name and namespace, no selector);
 * - a ConfigMap it creates is one of its own two in its own namespace (the status report and the
 *   policy's parameters).
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
  const v = (name: string): string => `variables.${name}`;
  const who = `rt-bootstrapper's ServiceAccount ${WEBHOOK_SERVICE_ACCOUNT}`;
  const ours = celString(ADMISSION_POLICY_NAME);
  const isPolicy = `request.resource.resource == 'mutatingadmissionpolicies'`;
  const isBinding = `request.resource.resource == 'mutatingadmissionpolicybindings'`;
  const isConfigMap = `request.resource.resource == 'configmaps'`;
  const writes = `request.operation != 'DELETE'`;
  const spec = `${v('obj')}.spec`;
  const podRule =
    "has(r.apiGroups) && r.apiGroups == [''] && has(r.resources) && r.resources == ['pods'] && " +
    "has(r.operations) && r.operations == ['CREATE']";
  const validations: V1Validation[] = [
    {
      expression: `${isConfigMap} || ${v('name')} == ${ours}`,
      message: `${who} may write only the admission policy and binding named ${ADMISSION_POLICY_NAME}`,
      reason: 'Forbidden',
    },
    {
      expression:
        `!(${isConfigMap}) || (request.namespace == ${celString(namespace)} && ` +
        `${v('name')} in ${celList([WEBHOOK_STATUS_CONFIG_MAP, ADMISSION_POLICY_NAME])})`,
      message: `${who} may create only its status report and the admission policy's parameters, in ${namespace}`,
      reason: 'Forbidden',
    },
    {
      expression:
        `!(${isPolicy} && ${writes}) || (` +
        `has(${spec}.paramKind) && ${spec}.paramKind.kind == 'ConfigMap' && ` +
        `has(${spec}.matchConstraints) && has(${spec}.matchConstraints.resourceRules) && ` +
        `${spec}.matchConstraints.resourceRules.all(r, ${podRule}))`,
      message: `${who} may write an admission policy that matches only the creation of Pods, with ConfigMap parameters`,
      reason: 'Forbidden',
    },
    {
      expression:
        `!(${isBinding} && ${writes}) || (` +
        `has(${spec}.policyName) && ${spec}.policyName == ${ours} && has(${spec}.paramRef) && ` +
        `has(${spec}.paramRef.name) && ${spec}.paramRef.name == ${ours} && ` +
        `has(${spec}.paramRef.namespace) && ${spec}.paramRef.namespace == ${celString(namespace)} && ` +
        `!has(${spec}.paramRef.selector))`,
      message: `${who} may write only a binding of the policy ${ADMISSION_POLICY_NAME} to its parameters ${namespace}/${ADMISSION_POLICY_NAME}`,
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
            {
              apiGroups: ['admissionregistration.k8s.io'],
              apiVersions: ['*'],
              operations: ['CREATE', 'UPDATE', 'DELETE'],
              resources: ['mutatingadmissionpolicies', 'mutatingadmissionpolicybindings'],
            },
            // RBAC cannot limit a create by name; updates of ConfigMaps are limited by name there.
            { apiGroups: [''], apiVersions: ['*'], operations: ['CREATE'], resources: ['configmaps'] },
          ],
        },
        matchConditions: [
          {
            name: 'webhook-service-account',
            expression: `request.userInfo.username == ${celString(webhookUserName(namespace))}`,
          },
        ],
        variables: [
          // A delete has no object: it is named in the request.
          { name: 'obj', expression: `${writes} ? dyn(object) : dyn(oldObject)` },
          // The name in the body (a create has no request.name; a generated one is no name of ours).
          {
            name: 'name',
            expression: `has(${v('obj')}.metadata.name) ? ${v('obj')}.metadata.name : ''`,
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
