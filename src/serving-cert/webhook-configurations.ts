/**
 * Our Mutating and Validating webhook configurations as the certificate keeper sees them: the
 * caBundle of each webhook entry, and a server-side apply that sets exactly that field (for each
 * entry: its name and `clientConfig.caBundle`) under our own field manager, forced, so an
 * upstream or KIM install that owned the field passes it to us. Only an existing configuration
 * is patched; one is never created here.
 */
import type {
  V1MutatingWebhookConfiguration,
  V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import {
  CA_BUNDLE_FIELD_MANAGER,
  MUTATING_WEBHOOK_CONFIGURATION,
  VALIDATING_WEBHOOK_CONFIGURATION,
} from '../api/runtime-names.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { kubeRequest } from '../kube/kube-request.js';

/** Either kind of configuration (the fields read here are the same). */
export type WebhookConfiguration = V1MutatingWebhookConfiguration | V1ValidatingWebhookConfiguration;

/** One of our configurations: its kind, name and collection path. */
export interface ConfigurationKind {
  readonly kind: 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration';
  readonly name: string;
  /** The collection, e.g. `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations`. */
  readonly path: string;
}

const GROUP_PATH = '/apis/admissionregistration.k8s.io/v1';

/** Our MutatingWebhookConfiguration. */
export const MUTATING: ConfigurationKind = {
  kind: 'MutatingWebhookConfiguration',
  name: MUTATING_WEBHOOK_CONFIGURATION,
  path: `${GROUP_PATH}/mutatingwebhookconfigurations`,
};
/** Our ValidatingWebhookConfiguration (the drift channel; present only with it). */
export const VALIDATING: ConfigurationKind = {
  kind: 'ValidatingWebhookConfiguration',
  name: VALIDATING_WEBHOOK_CONFIGURATION,
  path: `${GROUP_PATH}/validatingwebhookconfigurations`,
};

/** The caBundle (PEM text, '' when unset or undecodable) of each webhook entry. */
export function caBundlesOf(configuration: WebhookConfiguration | undefined): string[] {
  return (configuration?.webhooks ?? []).map((w) => {
    const b = w.clientConfig.caBundle;
    return typeof b === 'string' ? Buffer.from(b, 'base64').toString('utf8') : '';
  });
}

/**
 * The configurations of `configs` (kind, as last seen) with an entry whose caBundle is not
 * `bundlePem`: only existing ones that register webhooks (a configuration is never created here).
 */
export function lackingBundle(
  configs: readonly (readonly [ConfigurationKind, WebhookConfiguration | undefined])[],
  bundlePem: string,
): [ConfigurationKind, WebhookConfiguration][] {
  const out: [ConfigurationKind, WebhookConfiguration][] = [];
  for (const [kind, config] of configs) {
    if (!config || (config.webhooks ?? []).length === 0) continue;
    if (caBundlesOf(config).some((b) => b !== bundlePem)) out.push([kind, config]);
  }
  return out;
}

/**
 * Sets `caBundle` of every webhook entry of `configuration` (as last seen) to `bundlePem`; resolves
 * with the configuration as written.
 */
export async function applyCaBundle(
  access: ClusterAccess,
  kind: ConfigurationKind,
  configuration: WebhookConfiguration,
  bundlePem: string,
  timeoutMs = 15_000,
): Promise<WebhookConfiguration> {
  const caBundle = Buffer.from(bundlePem, 'utf8').toString('base64');
  const body = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: kind.kind,
    // The version last seen: never creates the object (a create with a resourceVersion is
    // refused) and never applies over entries it has not seen (409, and the caller reads again).
    metadata: { name: kind.name, resourceVersion: configuration.metadata?.resourceVersion },
    webhooks: (configuration.webhooks ?? []).map((w) => ({ name: w.name, clientConfig: { caBundle } })),
  };
  return await kubeRequest<WebhookConfiguration>(access, {
    method: 'PATCH',
    path: `${kind.path}/${encodeURIComponent(kind.name)}`,
    query: { fieldManager: CA_BUNDLE_FIELD_MANAGER, force: true },
    contentType: 'application/apply-patch+yaml',
    body,
    timeoutMs,
  });
}
