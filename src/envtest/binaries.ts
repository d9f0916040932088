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

/** Where the kube-apiserver and etcd binaries are, and what they are. */
export interface ControlPlaneBinaries {
  readonly kubeApiserver: string;
  readonly etcd: string;
  /** kubectl of the same release, when available (always when built here). */
  readonly kubectl: string | undefined;
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
}

const apiserverModule = join(hackDir, 'control-plane', 'kube-apiserver');
const modules: readonly GoBinarySpec[] = [
  kubernetesCommand('kube-apiserver', apiserverModule),
  kubernetesCommand('kubectl', apiserverModule),
  {
    binary: 'etcd',
    dir: join(hackDir, 'control-plane', 'etcd'),
    requirePath: 'go.etcd.io/etcd/server/v3',
    buildPackage: 'go.etcd.io/etcd/server/v3',
    ldflags: () => '-s -w',
  },
];

/**
 * Finds kube-apiserver and etcd: from `KUBEBUILDER_ASSETS` if it names a folder holding both
 * (the envtest convention), else from the version-keyed cache, building them with Go on a miss.
 */
export async function resolveBinaries(options: ResolveOptions = {}): Promise<ControlPlaneBinaries> {
  const env = options.env ?? process.env;
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
        kubernetesVersion: 'unknown',
        etcdVersion: 'unknown',
        source: 'KUBEBUILDER_ASSETS',
      };
    }
    options.log?.(`KUBEBUILDER_ASSETS=${assets} lacks kube-apiserver or etcd; using the project's own build`);
  }
  const paths: Record<string, GoBinary> = {};
  for (const spec of modules) {
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
    kubernetesVersion: kas.version,
    etcdVersion: etcd.version,
    source: kas.built || etcd.built || kubectl.built ? 'built' : 'cache',
  };
}

/** Removes every cached build (for `rtb control-plane clean`). */
export async function cleanCache(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  await rm(join(cacheRoot(env), 'control-plane'), { recursive: true, force: true });
}
