/**
 * Which API version of ClusterTrustBundle a cluster serves, chosen from its discovery documents
 * (pure). A fleet is never on one Kubernetes version (DESIGN.md §10): 1.34–1.36 serve
 * `certificates.k8s.io/v1beta1` only where it is enabled, 1.37 serves `v1` (and `v1beta1` only
 * where it is still enabled), 1.40 removes `v1beta1`. So the version is found per cluster, `v1`
 * where served, else `v1beta1`, else none, and never assumed.
 *
 * Discovery reads the group version resource lists (`GET /apis/certificates.k8s.io/<version>`)
 * in order of preference and stops at the first that lists `clustertrustbundles`: one request
 * where `v1` serves it, two elsewhere. `certificates.k8s.io/v1` itself is served everywhere (for
 * CertificateSigningRequests), so its list, not its existence, tells.
 */

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

/** What discovery answered for one group version: its resources' names, or `'absent'` (404). */
export type GroupVersionAnswer = readonly string[] | 'absent';

/** The answers read so far, by version (a version not in the map was not asked yet). */
export type DiscoveryAnswers = ReadonlyMap<TrustBundleVersion, GroupVersionAnswer>;

/** A cluster serving ClusterTrustBundle at one version. */
export interface ServedTrustBundleApi {
  readonly served: true;
  readonly version: TrustBundleVersion;
  /** `certificates.k8s.io/<version>`: what objects written there carry. */
  readonly apiVersion: string;
  /** The collection path, `/apis/certificates.k8s.io/<version>/clustertrustbundles`. */
  readonly path: string;
}

/** A cluster serving no version we speak. */
export interface UnservedTrustBundleApi {
  readonly served: false;
  /** What discovery found, for a status message: each version asked and its answer. */
  readonly found: string;
}

/** The outcome of discovery. */
export type TrustBundleApi = ServedTrustBundleApi | UnservedTrustBundleApi;

/** The next step of discovery: read one more group version, or the outcome. */
export type DiscoveryStep =
  { readonly read: TrustBundleVersion; readonly path: string } | { readonly done: TrustBundleApi };

/** `certificates.k8s.io/<version>`. */
export function trustBundleApiVersion(version: TrustBundleVersion): string {
  return `${TRUST_BUNDLE_GROUP}/${version}`;
}

/** The served API at `version`. */
export function servedTrustBundleApi(version: TrustBundleVersion): ServedTrustBundleApi {
  const apiVersion = trustBundleApiVersion(version);
  return { served: true, version, apiVersion, path: `/apis/${apiVersion}/${TRUST_BUNDLE_RESOURCE}` };
}

/**
 * The next step from the answers so far: the first version in order of preference that was not
 * asked yet is read next, unless a more preferred one already lists the resource; once every
 * version was asked without one listing it, none is served.
 */
export function nextDiscoveryStep(answers: DiscoveryAnswers): DiscoveryStep {
  for (const version of TRUST_BUNDLE_VERSIONS) {
    const answer = answers.get(version);
    if (answer === undefined) return { read: version, path: `/apis/${trustBundleApiVersion(version)}` };
    if (answer !== 'absent' && answer.includes(TRUST_BUNDLE_RESOURCE))
      return { done: servedTrustBundleApi(version) };
  }
  return { done: { served: false, found: describeAnswers(answers) } };
}

/** E.g. `certificates.k8s.io/v1 serves certificatesigningrequests but not clustertrustbundles; …`. */
function describeAnswers(answers: DiscoveryAnswers): string {
  const parts = TRUST_BUNDLE_VERSIONS.map((version) => {
    const gv = trustBundleApiVersion(version);
    const answer = answers.get(version);
    if (answer === undefined || answer === 'absent') return `${gv} is not served`;
    const top = answer.filter((r) => !r.includes('/'));
    const serves = top.length === 0 ? 'serves no resources' : `serves ${top.join(', ')}`;
    return `${gv} ${serves} but not ${TRUST_BUNDLE_RESOURCE}`;
  });
  return `discovery found: ${parts.join('; ')}`;
}

/** The resource names of a discovery `APIResourceList` (anything else: none). */
export function resourceNames(list: unknown): string[] {
  if (typeof list !== 'object' || list === null) return [];
  const resources = (list as { resources?: unknown }).resources;
  if (!Array.isArray(resources)) return [];
  return resources.flatMap((r: unknown) => {
    const name = typeof r === 'object' && r !== null ? (r as { name?: unknown }).name : undefined;
    return typeof name === 'string' ? [name] : [];
  });
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
  if (object.kind !== TRUST_BUNDLE_KIND || object.apiVersion === api.apiVersion) return object;
  return { ...object, apiVersion: api.apiVersion };
}
