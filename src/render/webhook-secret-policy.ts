/**
 * The ValidatingAdmissionPolicy that narrows which Secrets the webhook's ServiceAccount may write
 * (pure; docs/webhook-hardening.md, "Least privilege on the runtime").
 *
 * RBAC cannot limit a create by name (the name is in the body) nor anything by type, so the
 * ServiceAccount's right to create the pull Secret's copies was a right to create any Secret
 * anywhere: a `kubernetes.io/service-account-token` Secret under the pull Secret's name, annotated
 * with a privileged ServiceAccount, is filled in by the token controller and is then readable by
 * that name. This policy, matched to that ServiceAccount's user name alone, lets through exactly
 * the Secret writes of our own code:
 * - the pull Secret's copies (../webhook/pull-secret-copier.ts: create and replace): the pull
 *   Secret's name and a type the kubelet reads pull credentials from
 *   (`kubernetes.io/dockerconfigjson`, or the older `kubernetes.io/dockercfg`), in any namespace;
 *   a replace only of a Secret carrying our managed-by label (the copier never writes over a
 *   Secret of that name that is somebody else's, ./pull-secret-desired.ts);
 * - with the webhook's own serving certificate (`own` issuer, ../serving-cert/certificate-writer.ts):
 *   that Secret in the webhook's namespace, created or replaced, as `Opaque` or `kubernetes.io/tls`;
 * - a delete only of a Secret that is our copy, as ../runtime-agent/pull-secret/renamed-copies.ts tells one (our
 *   managed-by label, the copied-from annotation naming a Secret of its own name): the copier's
 *   delete before a re-create when the source's type changed, and the sweep of copies under an
 *   earlier pull-Secret name (../runtime-agent/pull-secret/renamed-copy-sweeper.ts: it deletes by name, unread,
 *   and a refusal here tells it the Secret of that name is not ours).
 * Everything else is refused, the preflight's candidate Secret included: the KCP writes it and the
 * webhook only reads it.
 */
import type { V1Validation } from '@kubernetes/client-node';
import { WEBHOOK_SERVICE_ACCOUNT, WEBHOOK_TLS_SECRET } from '../api/runtime-names.js';
import { COPIED_FROM_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';
import type { ServingIssuer } from '../serving-cert/serving-secret-plan.js';
import { celList, celString, webhookUserName, type WebhookWritePolicy } from './webhook-write-policy.js';

/** The policy and its binding share this name. */
export const WEBHOOK_SECRET_POLICY = 'rt-bootstrapper-webhook-secrets';

/** The Secret types the kubelet reads pull credentials from: the only types of a pull Secret copy. */
export const PULL_SECRET_TYPES: readonly string[] = [
  'kubernetes.io/dockerconfigjson',
  'kubernetes.io/dockercfg',
];

/** The types the serving Secret has: ours writes `Opaque`, an earlier install's may be `kubernetes.io/tls`. */
const SERVING_SECRET_TYPES: readonly string[] = ['Opaque', 'kubernetes.io/tls'];

/**
 * Renders the policy and its binding for the webhook in `namespace` whose pull Secret is
 * `pullSecret` (pure); `labels` are the labels of every object we render. With the `own` issuer the
 * webhook writes its serving Secret, so that one is allowed too.
 */
export function renderWebhookSecretPolicy(
  namespace: string,
  pullSecret: string,
  issuer: ServingIssuer['kind'],
  labels: Readonly<Record<string, string>>,
): WebhookWritePolicy {
  const v = (name: string): string => `variables.${name}`;
  const who = `rt-bootstrapper's ServiceAccount ${WEBHOOK_SERVICE_ACCOUNT}`;
  const pullCopy = `${v('name')} == ${celString(pullSecret)} && ${v('type')} in ${celList(PULL_SECRET_TYPES)}`;
  const servingSecret =
    issuer === 'own'
      ? `request.namespace == ${celString(namespace)} && ${v('name')} == ${celString(WEBHOOK_TLS_SECRET)} && ` +
        `${v('type')} in ${celList(SERVING_SECRET_TYPES)}`
      : 'false';
  const copied = `${v('annotations')}[${celString(COPIED_FROM_ANNOTATION)}]`;
  const ourCopy =
    `${celString(MANAGED_BY_LABEL)} in ${v('labels')} && ${v('labels')}[${celString(MANAGED_BY_LABEL)}] == ${celString(MANAGED_BY_VALUE)} && ` +
    `${celString(COPIED_FROM_ANNOTATION)} in ${v('annotations')} && ${copied}.indexOf('/') > 0 && ` +
    `${copied}.substring(${copied}.indexOf('/') + 1) == ${v('name')}`;
  const servingWords =
    issuer === 'own'
      ? `, or its serving Secret ${WEBHOOK_TLS_SECRET} in ${namespace} (Opaque or kubernetes.io/tls)`
      : '';
  const validations: V1Validation[] = [
    {
      expression:
        `request.operation == 'DELETE' || (${pullCopy} && (request.operation != 'UPDATE' || ${v('oldOurs')})) || ` +
        `(${servingSecret})`,
      message:
        `${who} may create or change only the pull Secret ${pullSecret} of type ${PULL_SECRET_TYPES.join(' or ')}` +
        ` (change: only a Secret labelled ${MANAGED_BY_LABEL}: ${MANAGED_BY_VALUE})` +
        servingWords,
      reason: 'Forbidden',
    },
    {
      expression: `request.operation != 'DELETE' || (${ourCopy})`,
      message: `${who} may delete only its own copies of the pull Secret (labelled ${MANAGED_BY_LABEL}: ${MANAGED_BY_VALUE}, annotated ${COPIED_FROM_ANNOTATION})`,
      reason: 'Forbidden',
    },
  ];
  return {
    policy: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: WEBHOOK_SECRET_POLICY, labels: { ...labels } },
      spec: {
        // An expression that cannot be evaluated refuses the write: only our ServiceAccount's
        // writes are matched, so nobody else is ever refused by this policy.
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [''],
              apiVersions: ['*'],
              operations: ['CREATE', 'UPDATE', 'DELETE'],
              resources: ['secrets'],
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
          // A delete has no object: what it removes is the old one.
          { name: 'secret', expression: "request.operation == 'DELETE' ? dyn(oldObject) : dyn(object)" },
          // The name in the body (a create has no request.name; a generated one is no name of ours).
          {
            name: 'name',
            expression: `has(${v('secret')}.metadata.name) ? ${v('secret')}.metadata.name : ''`,
          },
          { name: 'type', expression: `has(${v('secret')}.type) ? ${v('secret')}.type : 'Opaque'` },
          {
            name: 'labels',
            expression: `has(${v('secret')}.metadata.labels) ? ${v('secret')}.metadata.labels : {}`,
          },
          // An update changes only a Secret that is ours already (the copier never writes over another's).
          {
            name: 'oldOurs',
            expression:
              `request.operation == 'UPDATE' && has(oldObject.metadata.labels) && ` +
              `${celString(MANAGED_BY_LABEL)} in oldObject.metadata.labels && ` +
              `oldObject.metadata.labels[${celString(MANAGED_BY_LABEL)}] == ${celString(MANAGED_BY_VALUE)}`,
          },
          {
            name: 'annotations',
            expression: `has(${v('secret')}.metadata.annotations) ? ${v('secret')}.metadata.annotations : {}`,
          },
        ],
        validations,
      },
    },
    binding: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: WEBHOOK_SECRET_POLICY, labels: { ...labels } },
      spec: { policyName: WEBHOOK_SECRET_POLICY, validationActions: ['Deny'] },
    },
  };
}
