import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, chmod, constants, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ControlPlaneError } from './errors.js';

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

// src/envtest and dist/envtest both sit two levels below the package root.
const hackDir = fileURLToPath(new URL('../../hack/control-plane/', import.meta.url));

interface ModuleSpec {
  readonly binary: 'kube-apiserver' | 'kubectl' | 'etcd';
  readonly dir: string;
  readonly requirePath: string;
  readonly buildPackage: string;
  readonly ldflags: (version: string) => string;
}

// Stamps the release into k8s.io/component-base/version so `--version` and /version report it.
const kubernetesLdflags = (v: string): string => {
  const [major, minor] = v.replace(/^v/, '').split('.');
  const pkg = 'k8s.io/component-base/version';
  return `-s -w -X ${pkg}.gitVersion=${v} -X ${pkg}.gitMajor=${major ?? ''} -X ${pkg}.gitMinor=${minor ?? ''} -X ${pkg}.gitTreeState=clean`;
};

const modules: readonly ModuleSpec[] = [
  {
    binary: 'kube-apiserver',
    dir: join(hackDir, 'kube-apiserver'),
    requirePath: 'k8s.io/kubernetes',
    buildPackage: 'k8s.io/kubernetes/cmd/kube-apiserver',
    ldflags: kubernetesLdflags,
  },
  {
    binary: 'kubectl',
    dir: join(hackDir, 'kube-apiserver'),
    requirePath: 'k8s.io/kubernetes',
    buildPackage: 'k8s.io/kubernetes/cmd/kubectl',
    ldflags: kubernetesLdflags,
  },
  {
    binary: 'etcd',
    dir: join(hackDir, 'etcd'),
    requirePath: 'go.etcd.io/etcd/server/v3',
    buildPackage: 'go.etcd.io/etcd/server/v3',
    ldflags: () => '-s -w',
  },
];

/** The cache root for built binaries (outside git): `$RTB_CACHE_DIR` or `~/.cache/rt-bootstrapper`. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  if (env.RTB_CACHE_DIR) return env.RTB_CACHE_DIR;
  const base = env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(base, 'rt-bootstrapper');
}

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
  const paths: Record<string, { path: string; version: string; built: boolean }> = {};
  for (const spec of modules) {
    paths[spec.binary] = await ensureBinary(spec, env, options.log);
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

async function ensureBinary(
  spec: ModuleSpec,
  env: NodeJS.ProcessEnv,
  log: ((line: string) => void) | undefined,
): Promise<{ path: string; version: string; built: boolean }> {
  const goMod = await readFile(join(spec.dir, 'go.mod'), 'utf8');
  const goSum = await readFile(join(spec.dir, 'go.sum'), 'utf8');
  const version = requiredVersion(goMod, spec.requirePath);
  // The key covers go.sum too, so any change of a pinned dependency rebuilds.
  const digest = createHash('sha256').update(goMod).update(goSum).digest('hex').slice(0, 12);
  const dir = join(cacheRoot(env), 'control-plane', `${spec.binary}-${version}-${digest}`);
  const target = join(dir, spec.binary);
  if (await isExecutable(target)) return { path: target, version, built: false };

  await mkdir(dir, { recursive: true });
  const tmp = `${target}.tmp-${process.pid}`;
  log?.(`building ${spec.binary} ${version} with Go (once; cached in ${dir})`);
  const started = Date.now();
  await runGo(
    ['build', '-trimpath', '-ldflags', spec.ldflags(version), '-o', tmp, spec.buildPackage],
    spec.dir,
    env,
  );
  await chmod(tmp, 0o755);
  // Rename is atomic: a concurrent build of the same key just replaces an identical file.
  await rename(tmp, target);
  log?.(`built ${spec.binary} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { path: target, version, built: true };
}

/** Reads the pinned version of a module from a go.mod `require` line. */
export function requiredVersion(goMod: string, modulePath: string): string {
  const escaped = modulePath.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const match = new RegExp(`^\\s*(?:require\\s+)?${escaped}\\s+(v[^\\s]+)`, 'm').exec(goMod);
  if (!match?.[1]) throw new ControlPlaneError(`go.mod does not require ${modulePath}`);
  return match[1];
}

function runGo(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', args, {
      cwd,
      env: { ...env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly -buildvcs=false' },
      stdio: ['ignore', 'inherit', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-8000);
    });
    child.on('error', (cause: NodeJS.ErrnoException) => {
      if (cause.code === 'ENOENT') {
        reject(
          new ControlPlaneError(
            'the Go toolchain (`go`) is not on PATH: it is needed once to build kube-apiserver and etcd. ' +
              'Install Go 1.24 or newer (for example `apt-get install golang-go` or from go.dev), ' +
              'or set KUBEBUILDER_ASSETS to a folder that holds kube-apiserver and etcd.',
            { cause },
          ),
        );
      } else reject(new ControlPlaneError(`cannot run go: ${cause.message}`, { cause }));
    });
    child.on('close', (code) => {
      if (code === 0) resolve();
      else
        reject(new ControlPlaneError(`go ${args.join(' ')} failed (exit ${code ?? 'signal'}):\n${stderr}`));
    });
  });
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Removes every cached build (for `rtb control-plane clean`). */
export async function cleanCache(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  await rm(join(cacheRoot(env), 'control-plane'), { recursive: true, force: true });
}
