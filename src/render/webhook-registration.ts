import type {
  AdmissionregistrationV1WebhookClientConfig,
  V1MutatingWebhookConfiguration,
  V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import {
  APP_NAME,
  APP_NAME_LABEL,
  FIELD_MANAGER,
  MUTATE_PATH_UPSTREAM,
  VALIDATE_PATH,
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_NAME,
  VALIDATING_WEBHOOK_CONFIGURATION,
  VALIDATING_WEBHOOK_NAME,
  WEBHOOK_SERVICE,
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

/**
 * The MutatingWebhookConfiguration (pure): upstream's names and path, so an apply over an upstream
 * install replaces its one webhook instead of adding a second. In `url` mode the URL is used as
 * given (its path included).
 */
export function renderMutatingWebhookConfiguration(
  o: WebhookManifestOptions,
  namespace: string,
): V1MutatingWebhookConfiguration {
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
        // kube-system stays out, and so do the webhook's own Pods (upstream's objectSelector): a
        // webhook that must call itself to start could never come back after all its replicas went down.
        namespaceSelector: {
          matchExpressions: [
            { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] },
          ],
        },
        objectSelector: {
          matchExpressions: [{ key: APP_NAME_LABEL, operator: 'NotIn', values: [APP_NAME] }],
        },
      },
    ],
  };
}

/** CEL: the write was not sent under our field manager (a request without options is sent). */
const NOT_OUR_WRITE =
  `!has(request.options) || !has(request.options.fieldManager) || ` +
  `request.options.fieldManager != '${FIELD_MANAGER}'`;

/**
 * The drift channel's ValidatingWebhookConfiguration (pure); in `url` mode, the mutating URL with
 * its last path segment replaced by the validate path's.
 */
export function renderDriftWebhookConfiguration(
  o: WebhookManifestOptions,
  namespace: string,
): V1ValidatingWebhookConfiguration {
  const url = o.url === undefined ? undefined : new URL(VALIDATE_PATH.replace(/^\//, ''), o.url).toString();
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
        // The controller's own writes (a rotation, a repair) are no drift: the API server skips
        // the call for them instead of sending each one to the webhook to be dropped there. A
        // DELETE carries no field manager and is always sent.
        matchConditions: [{ name: 'not-rt-bootstrapper-writes', expression: NOT_OUR_WRITE }],
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
