import type { KubernetesObject, V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { ClusterTrustBundle } from '../../api/cluster-trust-bundle.js';
import { ConfigError, parseWebhookConfig, type WebhookConfig } from '../../api/webhook-config.js';
import { CONFIG_MAP_KEY, CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE } from '../../api/webhook-features.js';
import { CONTENT_VERSION_ANNOTATION, UNWRITTEN_BUNDLE_ANNOTATION } from '../../api/set-version.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../api/managed-labels.js';
import { TRUST_BUNDLE_KIND, trustBundleApiVersion } from '../../kube/trust-bundle-api.js';
import {
  clusterTrustBundleContentVersion,
  configMapContentVersion,
  secretContentVersion,
} from '../sources/content-hash.js';

/** The KCP's sources as the source watcher sees them (structurally its `SourceSnapshot`). */
export interface SyncSources {
  readonly pullSecret?: V1Secret;
  readonly clusterTrustBundle?: ClusterTrustBundle;
  readonly configMap?: V1ConfigMap;
  /** Hash over the three sources' contents. */
  readonly version: string;
  /** Missing or invalid sources as the watcher reported them; any of them stops propagation. */
  readonly problems?: readonly { readonly source: string; readonly reason: string }[];
}

/**
 * The three runtime objects of one source version, in the order they must be applied. The set
 * does not depend on the runtimes' Kubernetes versions: its ClusterTrustBundle is written at
 * {@link SET_TRUST_BUNDLE_API_VERSION}, and each runtime's writes carry the version that runtime
 * serves (../../kube/trust-bundle-api.ts), so a runtime moving to another version makes no new set.
 */
export interface SyncSet {
  readonly version: string;
  readonly config: WebhookConfig;
  /**
   * Trust bundle first, then pull Secret, then ConfigMap: the config never refers to what is not
   * there yet. Each carries the content version of its source ({@link CONTENT_VERSION_ANNOTATION}),
   * from which a runtime computes the set's version (../../api/set-version.ts); the ConfigMap also
   * {@link UNWRITTEN_BUNDLE_ANNOTATION} while its config names no bundle.
   */
  readonly objects: readonly KubernetesObject[];
}

/** The apiVersion of the set's ClusterTrustBundle; each runtime's write carries its own. */
export const SET_TRUST_BUNDLE_API_VERSION = trustBundleApiVersion('v1');

/** Either a consistent set or why the sources must not be propagated. */
export type SyncSetResult =
  { readonly ok: true; readonly set: SyncSet } | { readonly ok: false; readonly reason: string };

const stamp = (
  contentVersion: string,
  more: Record<string, string> = {},
): { labels: Record<string, string>; annotations: Record<string, string> } => ({
  labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
  annotations: { [CONTENT_VERSION_ANNOTATION]: contentVersion, ...more },
});

/**
 * Turns the KCP sources into the runtime objects of one versioned set (pure; the pull Secret's
 * content version is a memory-hard digest, computed once per content by ../sources/content-hash.ts), or refuses an
 * inconsistent set: any source the watcher reports missing or invalid, a missing or invalid
 * config, or a config naming a trust bundle the KCP does not hold.
 */
export function buildSyncSet(sources: SyncSources): SyncSetResult {
  if (sources.problems && sources.problems.length > 0) {
    return { ok: false, reason: sources.problems.map((p) => `${p.source}: ${p.reason}`).join('; ') };
  }
  const cm = sources.configMap;
  const where = `ConfigMap ${cm?.metadata?.namespace ?? ''}/${cm?.metadata?.name ?? ''}`;
  if (!cm) return { ok: false, reason: 'the webhook ConfigMap is missing on the KCP' };
  const text = cm.data?.[CONFIG_MAP_KEY];
  if (text === undefined) return { ok: false, reason: `${where} has no key ${CONFIG_MAP_KEY}` };
  let config: WebhookConfig;
  try {
    config = parseWebhookConfig(text);
  } catch (error) {
    const detail =
      error instanceof ConfigError
        ? error.issues.map((i) => `${i.path}: ${i.message}`).join('; ')
        : String(error);
    return { ok: false, reason: `${where} holds an invalid config: ${detail}` };
  }
  const objects: KubernetesObject[] = [];
  const wantedBundle = config.clusterTrustBundle?.name;
  const bundle = sources.clusterTrustBundle;
  if (wantedBundle !== undefined) {
    if (bundle?.metadata?.name !== wantedBundle) {
      const held = bundle?.metadata?.name ? ` (the KCP holds ${bundle.metadata.name})` : '';
      return {
        ok: false,
        reason: `the config names ClusterTrustBundle ${wantedBundle}, which does not exist on the KCP${held}`,
      };
    }
    objects.push({
      apiVersion: SET_TRUST_BUNDLE_API_VERSION,
      kind: TRUST_BUNDLE_KIND,
      metadata: { name: wantedBundle, ...stamp(clusterTrustBundleContentVersion(bundle)) },
      spec: { ...bundle.spec },
    } as KubernetesObject);
  }
  const secret = sources.pullSecret;
  if (secret) {
    objects.push({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: config.imagePullSecret.name,
        namespace: config.imagePullSecret.namespace,
        ...stamp(secretContentVersion(secret)),
      },
      type: secret.type ? secret.type : undefined,
      data: { ...secret.data },
    } as KubernetesObject);
  }
  // The set version counts the KCP's bundle even when the config names none; the runtime then
  // learns its version from the ConfigMap, as it holds no bundle to carry it.
  const unwritten: Record<string, string> =
    wantedBundle === undefined
      ? { [UNWRITTEN_BUNDLE_ANNOTATION]: bundle ? clusterTrustBundleContentVersion(bundle) : '-' }
      : {};
  objects.push({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: CONFIG_MAP_NAME,
      namespace: CONFIG_MAP_NAMESPACE,
      ...stamp(configMapContentVersion(cm), unwritten),
    },
    data: { [CONFIG_MAP_KEY]: text },
  } as KubernetesObject);
  return { ok: true, set: { version: sources.version, config, objects } };
}
