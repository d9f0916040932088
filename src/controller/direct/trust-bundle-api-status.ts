/**
 * The runtime's ClusterTrustBundle API in direct mode (pure): what of the set is written there,
 * and what the RuntimeBootstrapper status says of it (docs/trust-bundle-api.md). A runtime that
 * serves no version we speak gets the rest of the set (pull Secret, config) and a condition that
 * names what discovery found; its webhook mounts nothing.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { CONTENT_VERSION_ANNOTATION, UNWRITTEN_BUNDLE_ANNOTATION } from '../../api/set-version.js';
import { TRUST_BUNDLE_KIND, type TrustBundleApi } from '../../kube/trust-bundle-api.js';
import type { StatusBuilder } from './status-builder.js';
import type { SyncSet } from './sync-set.js';

/** How soon a runtime that serves none is looked at again (the API may be turned on). */
export const TRUST_API_RECHECK_MS = 10 * 60_000;

/** Whether the set holds a ClusterTrustBundle (the config names one). */
export function setHasTrustBundle(set: Pick<SyncSet, 'objects'>): boolean {
  return set.objects.some((o) => o.kind === TRUST_BUNDLE_KIND);
}

/**
 * The objects to write to a runtime serving `api`: without the bundle where none is served. The
 * set version still counts the bundle, so the ConfigMap then carries its content version
 * (../../api/set-version.ts), and the runtime computes the set's version as where it is written.
 */
export function sourcesFor(
  objects: readonly KubernetesObject[],
  api: TrustBundleApi | undefined,
): readonly KubernetesObject[] {
  if (api === undefined || api.served) return objects;
  const bundle = objects.find((o) => o.kind === TRUST_BUNDLE_KIND);
  const version = bundle?.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION] ?? '-';
  return objects
    .filter((o) => o.kind !== TRUST_BUNDLE_KIND)
    .map((o) =>
      o.kind === 'ConfigMap'
        ? {
            ...o,
            metadata: {
              ...o.metadata,
              annotations: { ...o.metadata?.annotations, [UNWRITTEN_BUNDLE_ANNOTATION]: version },
            },
          }
        : o,
    );
}

/**
 * Records the runtime's API: the version in `clusterTrustBundleAPI` and condition `TrustBundleAPI`
 * (True `Served`, or False `NotServed` with what discovery found); with no bundle in the set
 * (`api` undefined) neither, as the runtime's API does not matter then.
 */
export function recordTrustBundleApi(status: StatusBuilder, api: TrustBundleApi | undefined): void {
  if (api === undefined) {
    status.trustBundleApi(undefined).dropCondition('TrustBundleAPI');
  } else if (api.served) {
    status
      .trustBundleApi(api.apiVersion)
      .condition(
        'TrustBundleAPI',
        'True',
        'Served',
        `the ClusterTrustBundle is written at ${api.apiVersion}`,
      );
  } else {
    status
      .trustBundleApi(undefined)
      .condition(
        'TrustBundleAPI',
        'False',
        'NotServed',
        `${api.found}; the ClusterTrustBundle is not written there (the pull Secret and the config are) and the webhook mounts no trust bundle`,
      );
  }
}

/** Whether the last pass found no API served: the set is applied again until one is. */
export function trustBundleApiMissing(status: StatusBuilder): boolean {
  return status.get('TrustBundleAPI')?.status === 'False';
}
