/**
 * Whether every node's kubelet can read the ClusterTrustBundle API its cluster serves
 * (docs/trust-bundle-api.md, "Kubelet skew"). A kubelet looks for the bundle only at the versions
 * it knows: 1.33–1.36 at `v1beta1` (then `v1alpha1`, which we do not speak), 1.37–1.39 at `v1`
 * then `v1beta1`, 1.40 on at `v1` (v1beta1 removed). Kubernetes lets kubelets run three minors
 * behind the API server, so a 1.37 runtime serving only `v1` may have 1.34 nodes: a Pod with the
 * mount never starts there (`FailedMount`), and the API server says nothing. Node status is a
 * runtime admin's input: the version is parsed bounded, in one linear scan. Pure.
 */

/** Gardener's label naming a node's worker pool. */
export const NODE_POOL_LABEL = 'worker.gardener.cloud/pool';

/** The longest kubelet version read (`v1.34.4-gke.1` is 13 characters); longer is not understood. */
export const KUBELET_VERSION_MAX_CHARS = 64;

/** How many pools (or nodes) a finding names; the rest are counted. */
export const MAX_POOLS_NAMED = 10;
/** How many kubelet versions it names per pool. */
const MAX_VERSIONS_NAMED = 3;
/** The longest line a finding is (node names can be long; a warning header is not the place). */
export const MAX_LINE_CHARS = 1_000;
/** Longest pool or node name kept (a node's name is at most 253 characters). */
const MAX_NAME_CHARS = 253;

/** A kubelet's Kubernetes version, as far as it matters here. */
export interface KubeletVersion {
  readonly major: number;
  readonly minor: number;
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
// After major.minor: the patch, a pre-release and build metadata (`-gke.1`, `+k3s1`).
const isSuffixChar = (c: number): boolean =>
  isDigit(c) ||
  (c >= 0x41 && c <= 0x5a) ||
  (c >= 0x61 && c <= 0x7a) ||
  c === 0x2e || // .
  c === 0x2d || // -
  c === 0x2b || // +
  c === 0x5f; // _

/** A run of 1–4 digits at `from`: its value and where it ends; undefined without one. */
function number(text: string, from: number): { value: number; end: number } | undefined {
  let end = from;
  while (end < text.length && end - from < 4 && isDigit(text.charCodeAt(end))) end++;
  if (end === from || (end < text.length && isDigit(text.charCodeAt(end)))) return undefined;
  return { value: Number(text.slice(from, end)), end };
}

/**
 * The major and minor of a kubelet's version (`v1.34.4`, `v1.34.4-gke.1`, `1.37.0`); undefined
 * for anything else: not a string, empty, longer than {@link KUBELET_VERSION_MAX_CHARS}, or a
 * character outside `[0-9A-Za-z.+_-]` (a version also goes into warnings and the report).
 */
export function parseKubeletVersion(text: unknown): KubeletVersion | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > KUBELET_VERSION_MAX_CHARS)
    return undefined;
  const start = text.startsWith('v') ? 1 : 0;
  const major = number(text, start);
  if (major === undefined || text[major.end] !== '.') return undefined;
  const minor = number(text, major.end + 1);
  if (minor === undefined) return undefined;
  const next = text[minor.end];
  if (next !== undefined && next !== '.' && next !== '-' && next !== '+') return undefined;
  for (let i = minor.end; i < text.length; i++) if (!isSuffixChar(text.charCodeAt(i))) return undefined;
  return { major: major.value, minor: minor.value };
}

/** The ClusterTrustBundle versions (of those we speak) a kubelet of `version` reads, most preferred first. */
export function kubeletReads(version: KubeletVersion): readonly string[] {
  if (version.major !== 1) return [];
  if (version.minor >= 40) return ['v1'];
  if (version.minor >= 37) return ['v1', 'v1beta1'];
  if (version.minor >= 33) return ['v1beta1'];
  return [];
}

/** What the webhook keeps of a Node: its name, its pool, its kubelet's version (bounded). */
export interface NodeKubelet {
  readonly name: string;
  /** The {@link NODE_POOL_LABEL} value, when labelled. */
  readonly pool?: string;
  /** The kubelet's version when it parses ({@link parseKubeletVersion}); absent otherwise. */
  readonly version?: string;
  readonly parsed?: KubeletVersion;
}

/** What {@link nodeKubeletOf} reads of a Node (status included: the version is there). */
export interface NodeLike {
  readonly metadata?: { readonly name?: string; readonly labels?: Readonly<Record<string, string>> };
  readonly status?: { readonly nodeInfo?: { readonly kubeletVersion?: unknown } };
}

/** The bounded form of a Node (the node reflector's view; pure). */
export function nodeKubeletOf(node: NodeLike): NodeKubelet {
  const name = (node.metadata?.name ?? '').slice(0, MAX_NAME_CHARS);
  const label = node.metadata?.labels?.[NODE_POOL_LABEL];
  const pool = typeof label === 'string' && label !== '' ? label.slice(0, MAX_NAME_CHARS) : undefined;
  const raw = node.status?.nodeInfo?.kubeletVersion;
  const parsed = parseKubeletVersion(raw);
  const understood = parsed !== undefined && typeof raw === 'string';
  return {
    name,
    pool,
    version: understood ? raw : undefined,
    parsed: understood ? parsed : undefined,
  };
}

/** Nodes of one pool (or one node without a pool) whose kubelets read no version served. */
export interface OldKubeletPool {
  /** `pool <name>`, or `node <name>` for a node without the pool label. */
  readonly pool: string;
  /** Their kubelets' versions, sorted. */
  readonly versions: readonly string[];
  readonly nodes: number;
}

/**
 * The pools whose nodes' kubelets read none of the `served` ClusterTrustBundle versions (`v1`,
 * `v1beta1`), sorted by name; empty when every node can. A node whose version does not parse is
 * not held against the mount (the kubelet says nothing we can weigh); {@link unreadableNodes}
 * counts them.
 */
export function oldKubeletPools(served: readonly string[], nodes: Iterable<NodeKubelet>): OldKubeletPool[] {
  const pools = new Map<string, { versions: Set<string>; nodes: number }>();
  for (const n of nodes) {
    if (n.parsed === undefined || n.version === undefined) continue;
    if (kubeletReads(n.parsed).some((v) => served.includes(v))) continue;
    const key = n.pool !== undefined ? `pool ${n.pool}` : `node ${n.name}`;
    const entry = pools.get(key) ?? { versions: new Set<string>(), nodes: 0 };
    entry.versions.add(n.version);
    entry.nodes++;
    pools.set(key, entry);
  }
  return [...pools.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([pool, e]) => ({ pool, versions: [...e.versions].sort(), nodes: e.nodes }));
}

/** Nodes whose kubelet version does not parse. */
export function unreadableNodes(nodes: Iterable<NodeKubelet>): number {
  let count = 0;
  for (const n of nodes) if (n.parsed === undefined) count++;
  return count;
}

/**
 * One line naming the old pools for the warning, the report and the condition (bounded: at most
 * {@link MAX_POOLS_NAMED} pools of {@link MAX_VERSIONS_NAMED} versions each); undefined when
 * there are none. `servedApis`: the API versions served, e.g. `certificates.k8s.io/v1`.
 */
export function describeOldKubelets(
  pools: readonly OldKubeletPool[],
  servedApis: readonly string[],
): string | undefined {
  if (pools.length === 0) return undefined;
  const named = pools.slice(0, MAX_POOLS_NAMED).map((p) => {
    const versions = p.versions.slice(0, MAX_VERSIONS_NAMED).join(', ');
    const more = p.versions.length > MAX_VERSIONS_NAMED ? ', …' : '';
    return `${p.pool} (${versions}${more}, ${p.nodes} node${p.nodes === 1 ? '' : 's'})`;
  });
  const rest = pools.length - named.length;
  const tail = rest > 0 ? ` and ${rest} more` : '';
  const served = servedApis.length > 0 ? servedApis.join(', ') : 'none';
  const line = `kubelets that cannot read the ClusterTrustBundle API served (${served}): ${named.join(', ')}${tail}`;
  return line.slice(0, MAX_LINE_CHARS);
}
