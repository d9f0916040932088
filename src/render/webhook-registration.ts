import type {
  AdmissionregistrationV1WebhookClientConfig,
  V1LabelSelector,
  V1MutatingWebhookConfiguration,
  V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import {
  APP_NAME,
  APP_NAME_LABEL,
  MUTATE_PATH_UPSTREAM,
  VALIDATE_PATH,
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_NAME,
  VALIDATING_WEBHOOK_CONFIGURATION,
  VALIDATING_WEBHOOK_NAME,
  WEBHOOK_SERVICE,
  WEBHOOK_SERVICE_ACCOUNT,
  REGISTRATION_EXCLUDED_NAMESPACES,
} from '../api/runtime-names.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';
import { ADMISSION_TIMEOUT_SECONDS } from '../api/serving-limits.js';
import { objectLabels, type WebhookManifestOptions } from './webhook-options.js';

/** The Service (at `path`) or, in `url` mode, the URL; with `caBundle` only when a CA is given. */
function clientConfig(
  o: WebhookManifestOptions,
  namespace: string,
  path: string,
  url: string | undefined,
): AdmissionregistrationV1WebhookClientConfig {
  const caBundle = o.caBundlePem ? { caBundle: Buffer.from(o.caBundlePem).toString('base64') } : {};
  return url !== undefined
    ? { url, ...caBundle }
    : { service: { name: WEBHOOK_SERVICE, namespace, path, port: 443 }, ...caBundle };
}

/** The matchCondition that leaves the webhook's own Pods out (the webhook's and the policy's). */
export const NOT_OWN_PODS_CONDITION = 'not-rt-bootstrapper-own-pods';

/** A namespace name that cannot be written into the own-Pods condition. */
export class AdmissionNamespaceError extends Error {
  constructor(readonly namespace: string) {
    super(`the webhook's namespace ${JSON.stringify(namespace)} is no namespace name`);
    this.name = 'AdmissionNamespaceError';
  }
}

// A namespace name (DNS-1123 label): nothing else may reach the condition's text.
const NAMESPACE_NAME = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * CEL: the Pod is not one of the webhook's own, that is not labelled `app.kubernetes.io/name:
 * rt-bootstrapper` in `namespace` (the webhook's). The label alone is no proof: any namespace
 * user can put it on a Pod of theirs; only a runtime's admin can create Pods in the webhook's
 * namespace. The request's namespace is the API server's (a Pod's own field may be empty on a
 * create), and every step is guarded: an error would count as a failure, and the registration
 * fails open, so a Pod whose condition errs would be admitted unchanged.
 *
 * @throws AdmissionNamespaceError when `namespace` is no namespace name.
 */
export function notOwnPodExpression(namespace: string): string {
  if (!NAMESPACE_NAME.test(namespace)) throw new AdmissionNamespaceError(namespace);
  const labels = 'object.metadata.labels';
  const key = JSON.stringify(APP_NAME_LABEL);
  return (
    `!(request.namespace == ${JSON.stringify(namespace)} && has(${labels}) && ` +
    `${key} in ${labels} && ${labels}[${key}] == ${JSON.stringify(APP_NAME)})`
  );
}

/**
 * The Pods our admission sees, the webhook's and the admission policy's alike: kube-system stays
 * out, and so do the webhook's own Pods in `namespace`, its own: a webhook that must call itself
 * to start could never come back after all its replicas went down. Upstream leaves them out by
 * an objectSelector on the label alone, which also let out any tenant's Pod carrying it; here a
 * matchCondition names the namespace too, and the objectSelector is the empty one (every Pod),
 * written out so that an apply over upstream's registration replaces its selector instead of
 * leaving it to the field manager that wrote it.
 *
 * @throws AdmissionNamespaceError when `namespace` is no namespace name.
 */
export function podAdmissionScope(namespace: string): {
  namespaceSelector: V1LabelSelector;
  objectSelector: V1LabelSelector;
  ownPodsCondition: { name: string; expression: string };
} {
  return {
    namespaceSelector: {
      matchExpressions: [
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: [...REGISTRATION_EXCLUDED_NAMESPACES],
        },
      ],
    },
    objectSelector: {},
    ownPodsCondition: { name: NOT_OWN_PODS_CONDITION, expression: notOwnPodExpression(namespace) },
  };
}

/**
 * The MutatingWebhookConfiguration (pure): upstream's names and path, so an apply over an upstream
 * install replaces its one webhook instead of adding a second. In `url` mode the URL is used as
 * given (its path included). `namespace` is the webhook's: its Service's, and the one whose Pods
 * labelled ours the webhook leaves out ({@link podAdmissionScope}).
 *
 * @throws AdmissionNamespaceError when `namespace` is no namespace name.
 */
export function renderMutatingWebhookConfiguration(
  o: WebhookManifestOptions,
  namespace: string,
): V1MutatingWebhookConfiguration {
  const podScope = podAdmissionScope(namespace);
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: MUTATING_WEBHOOK_CONFIGURATION, labels: objectLabels(o) },
    webhooks: [
      {
        name: MUTATING_WEBHOOK_NAME,
        admissionReviewVersions: ['v1'],
        clientConfig: clientConfig(o, namespace, MUTATE_PATH_UPSTREAM, o.url),
        // Upstream registers CREATE only. We also see UPDATE: a Pod's images can be changed in
        // place and ephemeral containers (`kubectl debug`) arrive by update; both would otherwise
        // escape the registry rewrite and the pull Secret.
        rules: [
          {
            operations: ['CREATE', 'UPDATE'],
            apiGroups: [''],
            apiVersions: ['v1'],
            resources: ['pods'],
            scope: 'Namespaced',
          },
          {
            operations: ['UPDATE'],
            apiGroups: [''],
            apiVersions: ['v1'],
            resources: ['pods/ephemeralcontainers'],
            scope: 'Namespaced',
          },
        ],
        matchPolicy: 'Equivalent',
        sideEffects: 'NoneOnDryRun',
        reinvocationPolicy: 'IfNeeded',
        // The server's answer times (QUEUE_TIMEOUT_MS, BODY_TIMEOUT_MS) are set inside this.
        timeoutSeconds: ADMISSION_TIMEOUT_SECONDS,
        failurePolicy: o.failurePolicy ?? 'Ignore',
        namespaceSelector: podScope.namespaceSelector,
        objectSelector: podScope.objectSelector,
        matchConditions: [podScope.ownPodsCondition],
      },
    ],
  };
}

/** The longest user name a condition is rendered for (a longer one is skipped by nobody). */
export const SKIP_USERNAME_MAX_CHARS = 512;

/**
 * A CEL string literal of `text`, or undefined unless it is printable ASCII within
 * {@link SKIP_USERNAME_MAX_CHARS} (the API server's answer names the user: no other text reaches
 * an expression).
 */
function celString(text: string): string | undefined {
  if (text.length === 0 || text.length > SKIP_USERNAME_MAX_CHARS) return undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return undefined;
  }
  return `"${text.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/**
 * CEL: the write was not made by one of `users`. The request's user is who the API server
 * authenticated, which no client can name as it likes (a field manager, any client can).
 */
export function notWrittenBy(users: readonly string[]): string | undefined {
  const literals = users.map(celString).filter((l): l is string => l !== undefined);
  return literals.length === 0
    ? undefined
    : literals.map((l) => `request.userInfo.username != ${l}`).join(' && ');
}

/**
 * The drift channel's ValidatingWebhookConfiguration (pure); in `url` mode, the mutating URL with
 * its last path segment replaced by the validate path's.
 */
export function renderDriftWebhookConfiguration(
  o: WebhookManifestOptions,
  namespace: string,
): V1ValidatingWebhookConfiguration {
  const url = o.url === undefined ? undefined : new URL(VALIDATE_PATH.replace(/^\//, ''), o.url).toString();
  const skip =
    notWrittenBy([
      `system:serviceaccount:${namespace}:${WEBHOOK_SERVICE_ACCOUNT}`,
      ...(o.driftSkipUsername === undefined ? [] : [o.driftSkipUsername]),
    ]) ?? 'true';
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: VALIDATING_WEBHOOK_CONFIGURATION, labels: objectLabels(o) },
    webhooks: [
      {
        name: VALIDATING_WEBHOOK_NAME,
        admissionReviewVersions: ['v1'],
        clientConfig: clientConfig(o, namespace, VALIDATE_PATH, url),
        // Only observes: it always allows, never blocks, and writes nothing.
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        timeoutSeconds: 2,
        matchPolicy: 'Equivalent',
        objectSelector: { matchLabels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
        // The KCP's own writes (a rotation, a repair) and the webhook's (the pull Secret's
        // copies) are no drift: the API server skips the call for them, by the user it
        // authenticated. Anyone else's write is sent, whatever field manager it names.
        matchConditions: [{ name: 'not-rt-bootstrapper-writes', expression: skip }],
        rules: [
          {
            operations: ['UPDATE', 'DELETE'],
            apiGroups: [''],
            apiVersions: ['v1'],
            resources: ['secrets', 'configmaps'],
          },
          {
            operations: ['UPDATE', 'DELETE'],
            apiGroups: ['certificates.k8s.io'],
            apiVersions: ['*'],
            resources: ['clustertrustbundles'],
          },
        ],
      },
    ],
  };
}
