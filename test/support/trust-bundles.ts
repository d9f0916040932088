/**
 * ClusterTrustBundles in tests, at the version the cluster serves (v1beta1 on 1.34 as set up here,
 * v1 on 1.37), found by the product's own discovery: client-node's generated clients speak one
 * version each, so a test using them would pass on one minor only.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ClusterTrustBundle, ClusterTrustBundleSpec } from '../../src/api/cluster-trust-bundle.js';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { discoverApi, discoveryGet } from '../../src/kube/api-discovery.js';
import {
  TRUST_BUNDLE_API,
  TRUST_BUNDLE_KIND,
  type ServedTrustBundleApi,
} from '../../src/kube/trust-bundle-api.js';

/** The API the cluster serves; throws when it serves none. */
export async function trustBundleApiOf(kc: ClusterAccess): Promise<ServedTrustBundleApi> {
  const api = await discoverApi(TRUST_BUNDLE_API, discoveryGet(kc));
  if (!api.served) throw new Error(`no ClusterTrustBundle API: ${api.found}`);
  return api;
}

const objectPath = (api: ServedTrustBundleApi, name: string): string =>
  `${api.path}/${encodeURIComponent(name)}`;

/** The bundle, or undefined when it does not exist. */
export async function readTrustBundle(
  kc: ClusterAccess,
  name: string,
): Promise<ClusterTrustBundle | undefined> {
  const api = await trustBundleApiOf(kc);
  try {
    return await kubeRequest<ClusterTrustBundle>(kc, { method: 'GET', path: objectPath(api, name) });
  } catch (error) {
    if (statusCodeOf(error) === 404) return undefined;
    throw error;
  }
}

/** The bundles carrying `labelSelector` (all without one). */
export async function listTrustBundles(
  kc: ClusterAccess,
  labelSelector?: string,
): Promise<ClusterTrustBundle[]> {
  const api = await trustBundleApiOf(kc);
  const list = await kubeRequest<{ items?: ClusterTrustBundle[] }>(kc, {
    method: 'GET',
    path: api.path,
    query: { labelSelector },
  });
  return list.items ?? [];
}

/** Creates the bundle, or replaces its spec (other fields of the spec as they were). */
export async function putTrustBundle(
  kc: ClusterAccess,
  name: string,
  spec: Partial<ClusterTrustBundleSpec> & Pick<ClusterTrustBundleSpec, 'trustBundle'>,
): Promise<void> {
  const api = await trustBundleApiOf(kc);
  const current = await readTrustBundle(kc, name);
  if (current) {
    await kubeRequest(kc, {
      method: 'PUT',
      path: objectPath(api, name),
      body: { ...current, spec: { ...current.spec, ...spec } },
    });
  } else {
    await kubeRequest(kc, {
      method: 'POST',
      path: api.path,
      body: { apiVersion: api.apiVersion, kind: TRUST_BUNDLE_KIND, metadata: { name }, spec },
    });
  }
}

/** Deletes the bundle (gone already is fine). */
export async function deleteTrustBundle(kc: ClusterAccess, name: string): Promise<void> {
  const api = await trustBundleApiOf(kc);
  try {
    await kubeRequest(kc, { method: 'DELETE', path: objectPath(api, name) });
  } catch (error) {
    if (statusCodeOf(error) !== 404) throw error;
  }
}

/** The bundle as an object to apply, at the version the cluster serves. */
export async function trustBundleObject(
  kc: ClusterAccess,
  name: string,
  spec: ClusterTrustBundleSpec,
): Promise<KubernetesObject> {
  const api = await trustBundleApiOf(kc);
  return {
    apiVersion: api.apiVersion,
    kind: TRUST_BUNDLE_KIND,
    metadata: { name },
    spec,
  } as KubernetesObject;
}
