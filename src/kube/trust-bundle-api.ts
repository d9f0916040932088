/**
 * ClusterTrustBundle's versions (./served-api.ts chooses one per cluster): 1.34–1.36 serve
 * `certificates.k8s.io/v1beta1` only where it is enabled, 1.37 serves `v1` (and `v1beta1` only
 * where it is still enabled), 1.40 removes `v1beta1`. `certificates.k8s.io/v1` itself is served
 * everywhere (for CertificateSigningRequests), so its resource list, not its existence, tells.
 */
import {
  atServedApi,
  groupVersion,
  servedApi,
  type ApiChoice,
  type ApiFamily,
  type ServedApi,
} from './served-api.js';

/** The API group of ClusterTrustBundle. */
export const TRUST_BUNDLE_GROUP = 'certificates.k8s.io';
/** Its resource (plural) name. */
export const TRUST_BUNDLE_RESOURCE = 'clustertrustbundles';
/** Its kind. */
export const TRUST_BUNDLE_KIND = 'ClusterTrustBundle';

/** The versions spoken, most preferred first. */
export const TRUST_BUNDLE_VERSIONS = ['v1', 'v1beta1'] as const;
/** One of {@link TRUST_BUNDLE_VERSIONS}. */
export type TrustBundleVersion = (typeof TRUST_BUNDLE_VERSIONS)[number];

/** ClusterTrustBundle as discovery looks for it (./served-api.ts). */
export const TRUST_BUNDLE_API: ApiFamily<TrustBundleVersion> = {
  group: TRUST_BUNDLE_GROUP,
  resource: TRUST_BUNDLE_RESOURCE,
  kind: TRUST_BUNDLE_KIND,
  versions: TRUST_BUNDLE_VERSIONS,
};

/** A cluster serving ClusterTrustBundle at one version. */
export type ServedTrustBundleApi = ServedApi<TrustBundleVersion>;

/** The outcome of discovery. */
export type TrustBundleApi = ApiChoice<TrustBundleVersion>;

/** `certificates.k8s.io/<version>`. */
export function trustBundleApiVersion(version: TrustBundleVersion): string {
  return groupVersion(TRUST_BUNDLE_API, version);
}

/** The served API at `version`. */
export function servedTrustBundleApi(version: TrustBundleVersion): ServedTrustBundleApi {
  return servedApi(TRUST_BUNDLE_API, version);
}

/** Whether `apiVersion` is one a ClusterTrustBundle can be written at (any we speak). */
export function isTrustBundleApiVersion(apiVersion: string | undefined): boolean {
  return TRUST_BUNDLE_VERSIONS.some((v) => trustBundleApiVersion(v) === apiVersion);
}

/** The object with the cluster's apiVersion when it is a ClusterTrustBundle; else itself (pure). */
export function atTrustBundleApi<T extends { readonly apiVersion?: string; readonly kind?: string }>(
  object: T,
  api: ServedTrustBundleApi,
): T {
  return atServedApi(TRUST_BUNDLE_API, object, api);
}
