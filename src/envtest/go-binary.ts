import { createHash } from 'node:crypto';
import { access, chmod, constants, mkdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from './cache-root.js';
import { ControlPlaneError } from './errors.js';
import { runCommand } from './run-command.js';

// src/envtest and dist/envtest both sit two levels below the package root.
/** The Go modules that pin what is built (hack/ in the package root). */
export const hackDir = fileURLToPath(new URL('../../hack/', import.meta.url));

/** One binary built from a pinned Go module. */
export interface GoBinarySpec {
  readonly binary: string;
  /** The folder of the go.mod that pins it. */
  readonly dir: string;
  /** The module whose version names the build (`k8s.io/kubernetes`). */
  readonly requirePath: string;
  readonly buildPackage: string;
  readonly ldflags: (version: string) => string;
}

/** A built (or cached) binary. */
export interface GoBinary {
  readonly path: string;
  readonly version: string;
  readonly built: boolean;
}

/** Stamps the release into k8s.io/component-base/version so `--version` and /version report it. */
export const kubernetesLdflags = (v: string): string => {
  const [major, minor] = v.replace(/^v/, '').split('.');
  const pkg = 'k8s.io/component-base/version';
  return `-s -w -X ${pkg}.gitVersion=${v} -X ${pkg}.gitMajor=${major ?? ''} -X ${pkg}.gitMinor=${minor ?? ''} -X ${pkg}.gitTreeState=clean`;
};

/** A Kubernetes command (`kube-apiserver`, `kubelet`, …) pinned by the go.mod in `dir`. */
export const kubernetesCommand = (binary: string, dir: string): GoBinarySpec => ({
  binary,
  dir,
  requirePath: 'k8s.io/kubernetes',
  buildPackage: `k8s.io/kubernetes/cmd/${binary}`,
  ldflags: kubernetesLdflags,
});

/** The binary from the version-keyed cache, built with Go on a miss. */
export async function ensureGoBinary(
  spec: GoBinarySpec,
  env: NodeJS.ProcessEnv,
  log: ((line: string) => void) | undefined,
): Promise<GoBinary> {
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
  await runCommand(
    'go',
    ['build', '-trimpath', '-ldflags', spec.ldflags(version), '-o', tmp, spec.buildPackage],
    {
      cwd: spec.dir,
      env: { ...env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly -buildvcs=false' },
      showStdout: true,
      missingHint:
        'the Go toolchain (`go`) is not on PATH: it is needed once to build the Kubernetes binaries and etcd. ' +
        'Install Go 1.24 or newer (for example `apt-get install golang-go` or from go.dev), ' +
        'or set KUBEBUILDER_ASSETS to a folder that holds kube-apiserver and etcd.',
    },
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

/** Whether `path` is an executable file. */
export async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
