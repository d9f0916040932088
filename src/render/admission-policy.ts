/**
 * The mutation as a MutatingAdmissionPolicy (DESIGN §13, docs/admission-policy.md): a policy whose
 * CEL is src/mutation's pipeline for a CREATE, its binding, and the parameters (a ConfigMap) that
 * carry the webhook config. Pure: the same config gives the same objects.
 */
import { APP_NAME, APP_NAME_LABEL, RUNTIME_NAMESPACE } from '../api/runtime-names.js';
import { podAdmissionScope } from './webhook-registration.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';
import type { WebhookConfig } from '../api/webhook-config.js';
import { policyMatchConditions, policyPatchExpression, policyVariables } from './admission-policy-cel.js';
import { admissionPolicyParamData, type AdmissionPolicyParamOptions } from './admission-policy-params.js';

/** The policy's, the binding's and the parameters' name. */
export const ADMISSION_POLICY_NAME = 'rt-bootstrapper-pod-mutation';

/** The admissionregistration versions that serve MutatingAdmissionPolicy (DESIGN §13). */
export type AdmissionPolicyApiVersion = 'v1' | 'v1beta1';

/** Options of renderAdmissionPolicy. */
export interface AdmissionPolicyOptions extends AdmissionPolicyParamOptions {
  /** `v1` (1.36 on) or `v1beta1` (1.34-1.35 with the gate); default `v1`. */
  readonly apiVersion?: AdmissionPolicyApiVersion | undefined;
  /**
   * The parameters' namespace, the webhook's (default kyma-system): the webhook's own Pods there
   * are left out, as the webhook registration leaves them out.
   */
  readonly namespace?: string | undefined;
}

/** A JSON object as the API takes it. */
type Manifest = Record<string, unknown>;

/** What renderAdmissionPolicy returns; install the parameters first, the binding last. */
export interface AdmissionPolicyManifests {
  readonly params: Manifest;
  readonly policy: Manifest;
  readonly binding: Manifest;
}

const LABELS = { [APP_NAME_LABEL]: APP_NAME, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };

/**
 * Compiles `config` (read as `rtb webhook` and `rtb mutate` read it, `--landscape` applied) into
 * the policy, its binding and its parameters. The policy matches what the webhook registration
 * matches, for CREATE only; it fails open (`Ignore`), so a Pod it cannot handle is the webhook's.
 *
 * @throws AdmissionPolicyConfigError naming the field the policy cannot carry.
 * @throws AdmissionNamespaceError when the namespace is no namespace name.
 */
export function renderAdmissionPolicy(
  config: WebhookConfig,
  options: AdmissionPolicyOptions = {},
): AdmissionPolicyManifests {
  const apiVersion = `admissionregistration.k8s.io/${options.apiVersion ?? 'v1'}`;
  const namespace = options.namespace ?? RUNTIME_NAMESPACE;
  const podScope = podAdmissionScope(namespace);
  const params: Manifest = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: ADMISSION_POLICY_NAME, namespace, labels: LABELS },
    data: admissionPolicyParamData(config, options),
  };
  const policy: Manifest = {
    apiVersion,
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: ADMISSION_POLICY_NAME, labels: LABELS },
    spec: {
      paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
      matchConstraints: {
        resourceRules: [
          { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] },
        ],
        matchPolicy: 'Equivalent',
        // As the webhook registration: kube-system stays out, and (the first condition) our own Pods.
        namespaceSelector: podScope.namespaceSelector,
        objectSelector: podScope.objectSelector,
      },
      matchConditions: [podScope.ownPodsCondition, ...policyMatchConditions()],
      failurePolicy: 'Ignore',
      // Called again after a later webhook changed the Pod; the policy's own result is a fixed point.
      reinvocationPolicy: 'IfNeeded',
      variables: policyVariables(),
      mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: policyPatchExpression() } }],
    },
  };
  const binding: Manifest = {
    apiVersion,
    kind: 'MutatingAdmissionPolicyBinding',
    metadata: { name: ADMISSION_POLICY_NAME, labels: LABELS },
    spec: {
      policyName: ADMISSION_POLICY_NAME,
      // Without its parameters the policy does nothing: the webhook alone serves.
      paramRef: { name: ADMISSION_POLICY_NAME, namespace, parameterNotFoundAction: 'Allow' },
    },
  };
  return { params, policy, binding };
}

/** The objects in the order they are applied: parameters, policy, binding. */
export function admissionPolicyManifestList(m: AdmissionPolicyManifests): Manifest[] {
  return [m.params, m.policy, m.binding];
}
