/**
 * The ValidatingAdmissionPolicy that narrows what the webhook's ServiceAccount may write on
 * workloads and Pods (pure; docs/webhook-hardening.md, "Least privilege on the runtime").
 *
 * RBAC cannot say "patch one annotation": to restart stale workloads (a Pod-template annotation)
 * and to label Pods an upstream install stamped, the ServiceAccount holds `patch` on every
 * Deployment, StatefulSet, DaemonSet and Pod it may reach, which is the power to run any code
 * there. This policy, matched to that ServiceAccount's user name alone, lets an UPDATE (a patch
 * is one) through only when the new object equals the old one but for:
 * - on a Deployment, StatefulSet or DaemonSet: the Pod template's
 *   `rt-bootstrapper.kyma-project.io/ctb-hash` annotation (a SHA-256 hex value) and the
 *   escaped-Pod repair's `rt-bootstrapper.kyma-project.io/escaped-repair` (a set version, at most
 *   64 characters of `[0-9A-Za-z._-]`); on a DaemonSet
 *   also `deprecated.daemonset.template.generation`, which the API server itself raises with
 *   every template change; on the webhook's own Deployment also the restarter's status
 *   annotation;
 * - on a Pod: our label `rt-bootstrapper.kyma-project.io/ctb-mounted` (value `"true"`);
 * - on every object: what the API server writes itself (`resourceVersion`, `generation`,
 *   `managedFields`).
 * A Pod CREATE by the ServiceAccount must be a dry run (the trust-bundle projection probe,
 * ../webhook/trust-capability/probe-pod.ts, is one; nothing else of ours creates Pods).
 *
 * The comparison walks the objects' keys (each level cast to `dyn`, so no field list of ours can
 * miss a field a later Kubernetes adds): every key of the new object but the allowed ones must be
 * in the old one with an equal value, and the old one may have no key the new one lacks.
 */
import type {
  V1ValidatingAdmissionPolicy,
  V1ValidatingAdmissionPolicyBinding,
  V1Validation,
} from '@kubernetes/client-node';
import { ESCAPED_REPAIR_ANNOTATION } from '../api/escaped-pods.js';
import { WEBHOOK_DEPLOYMENT, WEBHOOK_SERVICE_ACCOUNT } from '../api/runtime-names.js';
import {
  CTB_HASH_ANNOTATION,
  CTB_MOUNTED_LABEL,
  CTB_MOUNTED_VALUE,
  TRUST_STATUS_ANNOTATION,
} from '../api/trust-stamp.js';

/** The policy and its binding share this name. */
export const WEBHOOK_WRITE_POLICY = 'rt-bootstrapper-webhook-writes';

/** The annotation the API server raises on a DaemonSet with every template change (apps/v1). */
export const DAEMONSET_TEMPLATE_GENERATION = 'deprecated.daemonset.template.generation';

/**
 * The values the escaped-Pod repair writes on a Pod template (../api/escaped-pods.ts): a set
 * version or `config-` and 16 hex digits; at most 64 characters.
 */
const REPAIR_VALUE = '^[0-9A-Za-z][0-9A-Za-z._-]{0,63}$';

/** What the API server writes into metadata itself on an update. */
const SERVER_WRITTEN_METADATA = ['resourceVersion', 'generation', 'managedFields'];

/** The policy and its binding, in apply order. */
export interface WebhookWritePolicy {
  readonly policy: V1ValidatingAdmissionPolicy;
  readonly binding: V1ValidatingAdmissionPolicyBinding;
}

/** CEL: a string literal of `s`. */
export const celString = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
/** CEL: a list literal of `items`. */
export const celList = (items: readonly string[]): string => `[${items.map(celString).join(', ')}]`;
const str = celString;
const list = celList;

/**
 * CEL: maps (or objects cast to dyn) `a` and `b` are equal but for the keys in `except` (a CEL
 * list expression).
 */
export function sameExcept(a: string, b: string, except: string): string {
  return (
    `${a}.all(k, k in (${except}) || (k in ${b} && ${a}[k] == ${b}[k])) && ` +
    `${b}.all(k, k in (${except}) || k in ${a})`
  );
}

/** CEL: `field` of the dyn value `of`, or an empty map. */
const orEmpty = (of: string, field: string): string => `has(${of}.${field}) ? ${of}.${field} : {}`;

/** The user name the API server gives the webhook's ServiceAccount in `namespace`. */
export function webhookUserName(namespace: string): string {
  return `system:serviceaccount:${namespace}:${WEBHOOK_SERVICE_ACCOUNT}`;
}

/**
 * Renders the policy and its binding for the webhook in `namespace` (pure); `labels` are the
 * labels of every object we render.
 */
export function renderWebhookWritePolicy(
  namespace: string,
  labels: Readonly<Record<string, string>>,
): WebhookWritePolicy {
  const v = (name: string): string => `variables.${name}`;
  const update = "request.operation != 'UPDATE'";
  const podMessage = `may change on a Pod only its label ${CTB_MOUNTED_LABEL}`;
  const workloadMessage = `may change on a workload only its Pod template's annotation ${CTB_HASH_ANNOTATION}`;
  const who = `rt-bootstrapper's ServiceAccount ${WEBHOOK_SERVICE_ACCOUNT}`;
  const validations: V1Validation[] = [
    {
      expression: "request.operation != 'CREATE' || request.dryRun == true",
      message: `${who} may create Pods only in a dry run`,
      reason: 'Forbidden',
    },
    {
      expression: `${update} || ${sameExcept(v('obj'), v('old'), `${v('isPod')} ? ['metadata'] : ['metadata', 'spec']`)}`,
      message: `${who} may change no spec or status (on a workload only its Pod template's annotation ${CTB_HASH_ANNOTATION}, on a Pod only its label ${CTB_MOUNTED_LABEL})`,
      reason: 'Forbidden',
    },
    {
      expression: `${update} || ${sameExcept(`${v('obj')}.metadata`, `${v('old')}.metadata`, list([...SERVER_WRITTEN_METADATA, 'labels', 'annotations']))}`,
      message: `${who} may change no metadata but labels and annotations allowed to it`,
      reason: 'Forbidden',
    },
    {
      expression:
        `${update} || (${sameExcept(v('labels'), v('oldLabels'), `${v('isPod')} ? ${list([CTB_MOUNTED_LABEL])} : []`)}) && ` +
        `(!${v('isPod')} || !(${str(CTB_MOUNTED_LABEL)} in ${v('labels')}) || ${v('labels')}[${str(CTB_MOUNTED_LABEL)}] == ${str(CTB_MOUNTED_VALUE)})`,
      message: `${who} ${podMessage} (value "${CTB_MOUNTED_VALUE}"), and no label of a workload`,
      reason: 'Forbidden',
    },
    {
      expression: `${update} || ${sameExcept(v('annotations'), v('oldAnnotations'), v('allowedAnnotations'))}`,
      message: `${who} may change no annotation of an object (but the restarter's status on its own Deployment)`,
      reason: 'Forbidden',
    },
    {
      expression:
        `${update} || ${v('isPod')} || (${sameExcept(`${v('obj')}.spec`, `${v('old')}.spec`, "['template']")}) && ` +
        `(${sameExcept(v('template'), v('oldTemplate'), "['metadata']")}) && ` +
        `(${sameExcept(v('templateMeta'), v('oldTemplateMeta'), "['annotations']")})`,
      message: `${who} ${workloadMessage}: it changed the spec`,
      reason: 'Forbidden',
    },
    {
      expression:
        `${update} || ${v('isPod')} || (${sameExcept(v('templateAnnotations'), v('oldTemplateAnnotations'), list([CTB_HASH_ANNOTATION, ESCAPED_REPAIR_ANNOTATION]))}) && ` +
        `(!(${str(CTB_HASH_ANNOTATION)} in ${v('templateAnnotations')}) || ${v('templateAnnotations')}[${str(CTB_HASH_ANNOTATION)}].matches('^[0-9a-f]{64}$')) && ` +
        `(!(${str(ESCAPED_REPAIR_ANNOTATION)} in ${v('templateAnnotations')}) || ${v('templateAnnotations')}[${str(ESCAPED_REPAIR_ANNOTATION)}].matches('${REPAIR_VALUE}'))`,
      message: `${who} ${workloadMessage} (a SHA-256 hex value), or the escaped-Pod repair's ${ESCAPED_REPAIR_ANNOTATION} (a set version)`,
      reason: 'Forbidden',
    },
  ];
  const ownDeployment =
    `request.resource.resource == 'deployments' && request.namespace == ${str(namespace)} && ` +
    `request.name == ${str(WEBHOOK_DEPLOYMENT)}`;
  return {
    policy: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: WEBHOOK_WRITE_POLICY, labels: { ...labels } },
      spec: {
        // An expression that cannot be evaluated refuses the write: only our ServiceAccount's
        // writes are matched, so nobody else is ever refused by this policy.
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ['apps'],
              apiVersions: ['*'],
              operations: ['UPDATE'],
              resources: ['deployments', 'statefulsets', 'daemonsets'],
            },
            { apiGroups: [''], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['pods'] },
          ],
        },
        matchConditions: [
          {
            name: 'webhook-service-account',
            expression: `request.userInfo.username == ${str(webhookUserName(namespace))}`,
          },
        ],
        variables: [
          {
            name: 'isPod',
            expression: "request.resource.group == '' && request.resource.resource == 'pods'",
          },
          { name: 'obj', expression: 'dyn(object)' },
          { name: 'old', expression: 'dyn(oldObject)' },
          { name: 'labels', expression: orEmpty(`${v('obj')}.metadata`, 'labels') },
          { name: 'oldLabels', expression: orEmpty(`${v('old')}.metadata`, 'labels') },
          { name: 'annotations', expression: orEmpty(`${v('obj')}.metadata`, 'annotations') },
          { name: 'oldAnnotations', expression: orEmpty(`${v('old')}.metadata`, 'annotations') },
          {
            name: 'allowedAnnotations',
            expression:
              `${ownDeployment} ? ${list([TRUST_STATUS_ANNOTATION])} : ` +
              `request.resource.resource == 'daemonsets' ? ${list([DAEMONSET_TEMPLATE_GENERATION])} : []`,
          },
          { name: 'template', expression: orEmpty(`${v('obj')}.spec`, 'template') },
          { name: 'oldTemplate', expression: orEmpty(`${v('old')}.spec`, 'template') },
          { name: 'templateMeta', expression: orEmpty(v('template'), 'metadata') },
          { name: 'oldTemplateMeta', expression: orEmpty(v('oldTemplate'), 'metadata') },
          { name: 'templateAnnotations', expression: orEmpty(v('templateMeta'), 'annotations') },
          { name: 'oldTemplateAnnotations', expression: orEmpty(v('oldTemplateMeta'), 'annotations') },
        ],
        validations,
      },
    },
    binding: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: WEBHOOK_WRITE_POLICY, labels: { ...labels } },
      spec: { policyName: WEBHOOK_WRITE_POLICY, validationActions: ['Deny'] },
    },
  };
}
