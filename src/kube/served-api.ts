/**
 * Which version of an API a cluster serves, chosen from its discovery documents (pure). A fleet is
 * never on one Kubernetes version (DESIGN.md §10): APIs move from beta to GA at a different minor
 * each (ClusterTrustBundle, MutatingAdmissionPolicy), a beta is served only where it is enabled,
 * and a later minor removes it. So the version is found per cluster, the most preferred served one,
 * else none, and never assumed.
 *
 * Discovery reads the group version resource lists (`GET /apis/<group>/<version>`) in order of
 * preference and stops at the first that lists the resource: one request where the preferred
 * version serves it. A group version can be served for other resources (`certificates.k8s.io/v1`
 * for CertificateSigningRequests, `admissionregistration.k8s.io/v1` for webhooks), so its list,
 * not its existence, tells.
 */

/** One API as discovery looks for it. */
export interface ApiFamily<V extends string> {
  readonly group: string;
  /** The resource (plural) name. */
  readonly resource: string;
  readonly kind: string;
  /** The versions spoken, most preferred first. */
  readonly versions: readonly V[];
}

/** What discovery answered for one group version: its resources' names, or `'absent'` (404). */
export type GroupVersionAnswer = readonly string[] | 'absent';

/** The answers read so far, by version (a version not in the map was not asked yet). */
export type DiscoveryAnswers<V extends string> = ReadonlyMap<V, GroupVersionAnswer>;

/** A cluster serving the API at one version. */
export interface ServedApi<V extends string> {
  readonly served: true;
  readonly version: V;
  /** `<group>/<version>`: what objects written there carry. */
  readonly apiVersion: string;
  /** The collection path, `/apis/<group>/<version>/<resource>`. */
  readonly path: string;
}

/** A cluster serving no version we speak. */
export interface UnservedApi {
  readonly served: false;
  /** What discovery found, for a status message: each version asked and its answer. */
  readonly found: string;
}

/** The outcome of discovery. */
export type ApiChoice<V extends string> = ServedApi<V> | UnservedApi;

/** The next step of discovery: read one more group version, or the outcome. */
export type DiscoveryStep<V extends string> =
  { readonly read: V; readonly path: string } | { readonly done: ApiChoice<V> };

/** `<group>/<version>`. */
export function groupVersion(family: ApiFamily<string>, version: string): string {
  return `${family.group}/${version}`;
}

/** The served API at `version`. */
export function servedApi<V extends string>(family: ApiFamily<V>, version: V): ServedApi<V> {
  const apiVersion = groupVersion(family, version);
  return { served: true, version, apiVersion, path: `/apis/${apiVersion}/${family.resource}` };
}

/**
 * The next step from the answers so far: the first version in order of preference that was not
 * asked yet is read next, unless a more preferred one already lists the resource; once every
 * version was asked without one listing it, none is served.
 */
export function nextDiscoveryStep<V extends string>(
  family: ApiFamily<V>,
  answers: DiscoveryAnswers<V>,
): DiscoveryStep<V> {
  for (const version of family.versions) {
    const answer = answers.get(version);
    if (answer === undefined) return { read: version, path: `/apis/${groupVersion(family, version)}` };
    if (answer !== 'absent' && answer.includes(family.resource)) return { done: servedApi(family, version) };
  }
  return { done: { served: false, found: describeAnswers(family, answers) } };
}

/** E.g. `certificates.k8s.io/v1 serves certificatesigningrequests but not clustertrustbundles; …`. */
function describeAnswers<V extends string>(family: ApiFamily<V>, answers: DiscoveryAnswers<V>): string {
  const parts = family.versions.map((version) => {
    const gv = groupVersion(family, version);
    const answer = answers.get(version);
    if (answer === undefined || answer === 'absent') return `${gv} is not served`;
    const top = answer.filter((r) => !r.includes('/'));
    const serves = top.length === 0 ? 'serves no resources' : `serves ${top.join(', ')}`;
    return `${gv} ${serves} but not ${family.resource}`;
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

/** The object with the cluster's apiVersion when it is of the family's kind; else itself (pure). */
export function atServedApi<T extends { readonly apiVersion?: string; readonly kind?: string }>(
  family: ApiFamily<string>,
  object: T,
  api: ServedApi<string>,
): T {
  if (object.kind !== family.kind || object.apiVersion === api.apiVersion) return object;
  return { ...object, apiVersion: api.apiVersion };
}
