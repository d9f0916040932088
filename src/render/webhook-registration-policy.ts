/**
 * The ValidatingAdmissionPolicy that narrows what the webhook's ServiceAccount may change on our
 * webhook configurations (pure; docs/webhook-hardening.md, "Least privilege on the runtime").
 *
 * The ServiceAccount patches the MutatingWebhookConfiguration and the drift channel's
 * ValidatingWebhookConfiguration for one field: each webhook's `clientConfig.caBundle` (the
 * serving-certificate keeper's server-side apply, ../serving-cert/webhook-configurations.ts).
 * RBAC cannot narrow a patch to a field, so that right was the power to send every Pod of the
 * cluster to another URL, to drop the rules or to make the webhook fail closed. This policy,
 * matched to that ServiceAccount's user name alone, refuses it creating or deleting a webhook
 * configuration, and lets an UPDATE through only when the new object equals the old one but for:
 * - each webhook's `clientConfig.caBundle` (the webhooks matched by name, none added or removed);
 * - the removal of `cert-manager.io/inject-ca-from`, which an upstream overlay left
 *   (../api/upstream-leftovers.ts, removed by ../runtime-agent/upstream-cleanup.ts): never set or changed;
 * - what the API server writes itself (`resourceVersion`, `generation`, `managedFields`).
 * The comparison walks the keys, each level cast to `dyn` (./webhook-write-policy.ts's
 * {@link sameExcept}), so a field a later Kubernetes adds to a webhook is compared too.
 */
import type { V1Validation } from '@kubernetes/client-node';
import { WEBHOOK_SERVICE_ACCOUNT } from '../api/runtime-names.js';
import { UPSTREAM_ANNOTATIONS } from '../api/upstream-leftovers.js';
import {
  celList,
  celString,
  sameExcept,
  webhookUserName,
  type WebhookWritePolicy,
} from './webhook-write-policy.js';

/** The policy and its binding share this name. */
export const WEBHOOK_REGISTRATION_POLICY = 'rt-bootstrapper-webhook-registrations';

/** What the API server writes into metadata itself on an update. */
const SERVER_WRITTEN_METADATA = ['resourceVersion', 'generation', 'managedFields'];

/** The annotations our upstream cleanup may remove from a webhook configuration (and only remove). */
const REMOVABLE_ANNOTATIONS = [
  ...new Set(
    UPSTREAM_ANNOTATIONS.filter(
      (a) =>
        a.resource === 'mutatingwebhookconfigurations' || a.resource === 'validatingwebhookconfigurations',
    ).map((a) => a.annotation),
  ),
];

/**
 * Renders the policy and its binding for the webhook in `namespace` (pure); `labels` are the
 * labels of every object we render.
 */
export function renderWebhookRegistrationPolicy(
  namespace: string,
  labels: Readonly<Record<string, string>>,
): WebhookWritePolicy {
  const v = (name: string): string => `variables.${name}`;
  const who = `rt-bootstrapper's ServiceAccount ${WEBHOOK_SERVICE_ACCOUNT}`;
  const update = "request.operation == 'UPDATE'";
  const removable = celList(REMOVABLE_ANNOTATIONS);
  // Each new webhook has an old one of its name equal to it but for the caBundle; names are unique
  // in a configuration (the API server checks), so with equal counts that is a one-to-one match.
  const sameWebhook = (w: string, o: string): string =>
    `${o}.name == ${w}.name && (${sameExcept(w, o, "['clientConfig']")}) && ` +
    `(${sameExcept(`(has(${w}.clientConfig) ? ${w}.clientConfig : {})`, `(has(${o}.clientConfig) ? ${o}.clientConfig : {})`, "['caBundle']")})`;
  const validations: V1Validation[] = [
    {
      expression: update,
      message: `${who} may not create or delete a webhook configuration`,
      reason: 'Forbidden',
    },
    {
      expression: sameExcept(v('obj'), v('old'), "['metadata', 'webhooks']"),
      message: `${who} may change on a webhook configuration only each webhook's caBundle`,
      reason: 'Forbidden',
    },
    {
      expression: sameExcept(
        `${v('obj')}.metadata`,
        `${v('old')}.metadata`,
        celList([...SERVER_WRITTEN_METADATA, 'annotations']),
      ),
      message: `${who} may change no metadata of a webhook configuration (labels included)`,
      reason: 'Forbidden',
    },
    {
      expression:
        `${sameExcept(v('annotations'), v('oldAnnotations'), removable)} && ` +
        `${v('annotations')}.all(k, !(k in ${removable}) || (k in ${v('oldAnnotations')} && ${v('annotations')}[k] == ${v('oldAnnotations')}[k]))`,
      message: `${who} may only remove ${REMOVABLE_ANNOTATIONS.join(', ')} from a webhook configuration's annotations`,
      reason: 'Forbidden',
    },
    {
      expression:
        `size(${v('webhooks')}) == size(${v('oldWebhooks')}) && ` +
        `${v('webhooks')}.all(w, ${v('oldWebhooks')}.exists(o, ${sameWebhook('w', 'o')}))`,
      message:
        `${who} may change on a webhook configuration only each webhook's caBundle ` +
        '(not its URL or service, rules, failure policy, match conditions, selectors or timeout, nor the webhooks)',
      reason: 'Forbidden',
    },
  ];
  return {
    policy: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: WEBHOOK_REGISTRATION_POLICY, labels: { ...labels } },
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
              resources: ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'],
            },
          ],
        },
        matchConditions: [
          {
            name: 'webhook-service-account',
            expression: `request.userInfo.username == ${celString(webhookUserName(namespace))}`,
          },
        ],
        variables: [
          // A create has no old object and a delete no new one: the first validation refuses both,
          // and these stand in so that the others can be evaluated.
          { name: 'obj', expression: `${update} ? dyn(object) : dyn({'metadata': {}})` },
          { name: 'old', expression: `${update} ? dyn(oldObject) : dyn({'metadata': {}})` },
          {
            name: 'annotations',
            expression: `has(${v('obj')}.metadata.annotations) ? ${v('obj')}.metadata.annotations : {}`,
          },
          {
            name: 'oldAnnotations',
            expression: `has(${v('old')}.metadata.annotations) ? ${v('old')}.metadata.annotations : {}`,
          },
          { name: 'webhooks', expression: `has(${v('obj')}.webhooks) ? ${v('obj')}.webhooks : []` },
          { name: 'oldWebhooks', expression: `has(${v('old')}.webhooks) ? ${v('old')}.webhooks : []` },
        ],
        validations,
      },
    },
    binding: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: WEBHOOK_REGISTRATION_POLICY, labels: { ...labels } },
      spec: { policyName: WEBHOOK_REGISTRATION_POLICY, validationActions: ['Deny'] },
    },
  };
}
