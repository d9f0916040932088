import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheRoot } from './cache-root.js';
import { ControlPlaneError } from './errors.js';
import {
  ensureGoBinary,
  hackDir,
  isExecutable,
  kubernetesCommand,
  type GoBinary,
  type GoBinarySpec,
} from './go-binary.js';
import {
  KUBERNETES_VERSION_LIST,
  KUBERNETES_VERSIONS,
  NEWEST_KUBERNETES_VERSION,
  defaultKubernetesVersion,
  type KubernetesVersion,
} from './kubernetes-versions.js';

/** Where the kube-apiserver and etcd binaries are, and what they are. */
export interface ControlPlaneBinaries {
  readonly kubeApiserver: string;
  readonly etcd: string;
  /** kubectl of the newest pinned release, when available (always when built here). */
  readonly kubectl: string | undefined;
  /**
   * The minor the API servers are started as (its flags). From KUBEBUILDER_ASSETS, the minor that
   * was asked for: those binaries are taken to be of it.
   */
  readonly kubernetes: KubernetesVersion;
  /** `v1.34.4` style, as pinned in hack/control-plane (or `unknown` for KUBEBUILDER_ASSETS). */
  readonly kubernetesVersion: string;
  readonly etcdVersion: string;
  /** How they were obtained. */
  readonly source: 'built' | 'cache' | 'KUBEBUILDER_ASSETS';
}

/** Options for resolving the binaries. */
export interface ResolveOptions {
  /** Print build progress (a cold build takes minutes). */
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** The minor to resolve; default `RTB_TEST_KUBERNETES`, else DEFAULT_KUBERNETES_VERSION. */
  kubernetes?: KubernetesVersion;
}

/** The folder of the Go module that pins kube-apiserver of a minor. */
export const apiserverModuleDir = (version: KubernetesVersion): string =>
  join(hackDir, 'control-plane', KUBERNETES_VERSIONS[version].module);

/** What is built for a minor, in build order: its kube-apiserver, the newest kubectl, etcd. */
export function controlPlaneModules(version: KubernetesVersion): readonly GoBinarySpec[] {
  return [
    kubernetesCommand('kube-apiserver', apiserverModuleDir(version)),
    // One kubectl for every minor: people use it too, and the newest reads what any of them serves.
    kubernetesCommand('kubectl', apiserverModuleDir(NEWEST_KUBERNETES_VERSION)),
    {
      binary: 'etcd',
      dir: join(hackDir, 'control-plane', 'etcd'),
      requirePath: 'go.etcd.io/etcd/server/v3',
      buildPackage: 'go.etcd.io/etcd/server/v3',
      ldflags: () => '-s -w',
    },
  ];
}

/**
 * Finds kube-apiserver and etcd: from `KUBEBUILDER_ASSETS` if it names a folder holding both
 * (the envtest convention; taken to be of the minor asked for), else from the version-keyed
 * cache, building them with Go on a miss.
 */
export async function resolveBinaries(options: ResolveOptions = {}): Promise<ControlPlaneBinaries> {
  const env = options.env ?? process.env;
  const kubernetes = options.kubernetes ?? defaultKubernetesVersion(env);
  const assets = env.KUBEBUILDER_ASSETS;
  if (assets) {
    const kubeApiserver = join(assets, 'kube-apiserver');
    const etcd = join(assets, 'etcd');
    if ((await isExecutable(kubeApiserver)) && (await isExecutable(etcd))) {
      const kubectl = join(assets, 'kubectl');
      return {
        kubeApiserver,
        etcd,
        kubectl: (await isExecutable(kubectl)) ? kubectl : undefined,
        kubernetes,
        kubernetesVersion: 'unknown',
        etcdVersion: 'unknown',
        source: 'KUBEBUILDER_ASSETS',
      };
    }
    options.log?.(`KUBEBUILDER_ASSETS=${assets} lacks kube-apiserver or etcd; using the project's own build`);
  }
  const paths: Record<string, GoBinary> = {};
  for (const spec of controlPlaneModules(kubernetes)) {
    paths[spec.binary] = await ensureGoBinary(spec, env, options.log);
  }
  const kas = paths['kube-apiserver'];
  const etcd = paths.etcd;
  const kubectl = paths.kubectl;
  if (!kas || !etcd || !kubectl) throw new ControlPlaneError('internal: binaries not resolved');
  return {
    kubeApiserver: kas.path,
    etcd: etcd.path,
    kubectl: kubectl.path,
    kubernetes,
    kubernetesVersion: kas.version,
    etcdVersion: etcd.version,
    source: kas.built || etcd.built || kubectl.built ? 'built' : 'cache',
  };
}

/** Resolves (builds on a miss) the binaries of every pinned minor, oldest first. */
export async function resolveAllBinaries(
  options: Omit<ResolveOptions, 'kubernetes'> = {},
): Promise<ControlPlaneBinaries[]> {
  const all: ControlPlaneBinaries[] = [];
  // One after another: on two cores parallel Go builds only contend.
  for (const kubernetes of KUBERNETES_VERSION_LIST)
    all.push(await resolveBinaries({ ...options, kubernetes }));
  return all;
}

/** Removes every cached build (for `rtb control-plane clean`). */
export async function cleanCache(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  await rm(join(cacheRoot(env), 'control-plane'), { recursive: true, force: true });
}
