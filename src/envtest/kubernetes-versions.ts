import { ControlPlaneError } from './errors.js';

/** What the local control plane needs to know about one pinned Kubernetes minor. */
export interface KubernetesVersionSpec {
  /** The Go module under `hack/control-plane/` that pins this release's kube-apiserver. */
  readonly module: string;
  /**
   * The kube-apiserver flags that make it serve ClusterTrustBundle and keep projected
   * `clusterTrustBundle` volume sources, as a Kyma runtime of this minor is set up.
   */
  readonly apiserverArgs: readonly string[];
  /** The one ClusterTrustBundle API version the API server serves with those flags. */
  readonly clusterTrustBundleApi: 'v1beta1' | 'v1';
  /**
   * MutatingAdmissionPolicy (DESIGN §13): the admissionregistration version that serves it, and the
   * flags it needs beyond `apiserverArgs` (a test passes them as `apiserverArgs` of its plane).
   */
  readonly admissionPolicy: { readonly api: 'v1beta1' | 'v1'; readonly apiserverArgs: readonly string[] };
}

/**
 * The Kubernetes minors the local control plane runs (DESIGN.md §10: the oldest minor Gardener
 * supports and the newest released one), each with its module and flags; docs/kubernetes-versions.md.
 */
export const KUBERNETES_VERSIONS = {
  '1.34': {
    module: 'kube-apiserver-1.34',
    // Beta and off by default in 1.34; the beta API is off by default too.
    apiserverArgs: [
      '--feature-gates=ClusterTrustBundle=true,ClusterTrustBundleProjection=true',
      '--runtime-config=certificates.k8s.io/v1beta1/clustertrustbundles=true',
    ],
    clusterTrustBundleApi: 'v1beta1',
    // Beta behind its gate in 1.34-1.35, its API off by default.
    admissionPolicy: {
      api: 'v1beta1',
      apiserverArgs: [
        '--feature-gates=MutatingAdmissionPolicy=true',
        '--runtime-config=admissionregistration.k8s.io/v1beta1=true',
      ],
    },
  },
  '1.37': {
    module: 'kube-apiserver-1.37',
    // Both gates are GA and on by default in 1.37 (setting a GA gate only draws a warning), v1 is
    // served by default; v1beta1 is off by default already and is switched off explicitly so a
    // client that still asks for it fails here as on a runtime.
    apiserverArgs: ['--runtime-config=certificates.k8s.io/v1beta1=false'],
    clusterTrustBundleApi: 'v1',
    // GA in 1.36, served by default.
    admissionPolicy: { api: 'v1', apiserverArgs: [] },
  },
} as const satisfies Readonly<Record<string, KubernetesVersionSpec>>;

/** A Kubernetes minor the local control plane pins (`1.34`, `1.37`). */
export type KubernetesVersion = keyof typeof KUBERNETES_VERSIONS;

/** Every pinned minor, oldest first. */
export const KUBERNETES_VERSION_LIST: readonly KubernetesVersion[] = (
  Object.keys(KUBERNETES_VERSIONS) as KubernetesVersion[]
).sort((a, b) => minorOf(a) - minorOf(b));

/** The minor a control plane without a node runs unless told otherwise: the newest released. */
export const DEFAULT_KUBERNETES_VERSION: KubernetesVersion = '1.37';

/** The minor of hack/node (kubelet and friends): a cluster with a node runs this one. */
export const NODE_KUBERNETES_VERSION: KubernetesVersion = '1.34';

/** The newest pinned minor: kubectl is built from its module only. */
export const NEWEST_KUBERNETES_VERSION: KubernetesVersion = '1.37';

/** The minors `scripts/run-tests.mjs` runs the files marked `// test-matrix: kubernetes` on. */
export const MATRIX_KUBERNETES_VERSIONS: readonly KubernetesVersion[] = KUBERNETES_VERSION_LIST;

/** The environment variable that sets the default minor for a whole process (`1.34`, `1.37`). */
export const KUBERNETES_VERSION_ENV = 'RTB_TEST_KUBERNETES';

/** Parses `1.37` (or `v1.37`); throws naming the pinned minors otherwise. */
export function parseKubernetesVersion(text: string, source = 'Kubernetes version'): KubernetesVersion {
  const minor = text.trim().replace(/^v/, '');
  if (isKubernetesVersion(minor)) return minor;
  throw new ControlPlaneError(
    `${source} ${JSON.stringify(text)} is not pinned here; pinned: ${KUBERNETES_VERSION_LIST.join(', ')}`,
  );
}

/** Whether `text` names a pinned minor exactly. */
export function isKubernetesVersion(text: string): text is KubernetesVersion {
  return Object.hasOwn(KUBERNETES_VERSIONS, text);
}

/** The default minor of this process: `RTB_TEST_KUBERNETES` when set, else the project's default. */
export function defaultKubernetesVersion(env: NodeJS.ProcessEnv = process.env): KubernetesVersion {
  const value = env[KUBERNETES_VERSION_ENV];
  if (value === undefined || value.trim() === '') return DEFAULT_KUBERNETES_VERSION;
  return parseKubernetesVersion(value, KUBERNETES_VERSION_ENV);
}

/** What decides a control plane's minor. */
export interface PlaneVersionInput {
  /** Asked for explicitly. */
  readonly kubernetes?: KubernetesVersion | undefined;
  /** The minor of binaries handed in. */
  readonly binaries?: KubernetesVersion | undefined;
  /** Whether any cluster of the plane gets a node. */
  readonly nodes?: boolean | undefined;
}

/**
 * The minor a control plane runs: the one asked for (or that of the binaries handed in), else the
 * process default. A plane with nodes runs the node's minor (the kubelet's skew is not tested
 * here), so it ignores the process default and refuses another minor asked for explicitly.
 */
export function planeKubernetesVersion(
  input: PlaneVersionInput,
  env: NodeJS.ProcessEnv = process.env,
): KubernetesVersion {
  if (input.kubernetes && input.binaries && input.kubernetes !== input.binaries)
    throw new ControlPlaneError(
      `the binaries handed in are for Kubernetes ${input.binaries}, the plane asks for ${input.kubernetes}`,
    );
  const explicit = input.kubernetes ?? input.binaries;
  if (input.nodes) {
    if (explicit && explicit !== NODE_KUBERNETES_VERSION)
      throw new ControlPlaneError(
        `a cluster with a node runs Kubernetes ${NODE_KUBERNETES_VERSION} (the kubelet of hack/node), not ${explicit}`,
      );
    return NODE_KUBERNETES_VERSION;
  }
  return explicit ?? defaultKubernetesVersion(env);
}

/** The API server flags of a minor, with the projection gate switched off when asked. */
export function versionApiserverArgs(
  version: KubernetesVersion,
  options: { readonly clusterTrustBundleProjection?: boolean | undefined } = {},
): string[] {
  return [
    ...KUBERNETES_VERSIONS[version].apiserverArgs,
    // A later --feature-gates merges into the earlier one: only this gate changes.
    ...(options.clusterTrustBundleProjection === false
      ? ['--feature-gates=ClusterTrustBundleProjection=false']
      : []),
  ];
}

function minorOf(version: string): number {
  return Number(version.split('.')[1]);
}
