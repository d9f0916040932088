import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheRoot } from './cache-root.js';
import { ControlPlaneError } from './errors.js';
import { pathExists } from './path-exists.js';
import { runCommand } from './run-command.js';

/** The pause image as an OCI archive, ready for `ctr images import`. */
export interface PauseImage {
  readonly archive: string;
  /** `3.10.1`: the TAG of build/pause/Makefile in the pinned Kubernetes module. */
  readonly tag: string;
}

/**
 * Builds the pause image from the source that ships in the pinned k8s.io/kubernetes module
 * (build/pause/linux/pause.c, compiled static as its Makefile does) and commits it with umoci;
 * cached by Kubernetes version.
 */
export async function ensurePauseImage(
  moduleDir: string,
  env: NodeJS.ProcessEnv,
  log: ((line: string) => void) | undefined,
): Promise<PauseImage> {
  const goEnv = { ...env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' };
  const info = JSON.parse(
    await runCommand('go', ['mod', 'download', '-json', 'k8s.io/kubernetes'], { cwd: moduleDir, env: goEnv }),
  ) as { Dir?: string; Version?: string };
  if (!info.Dir || !info.Version)
    throw new ControlPlaneError('go mod download named no k8s.io/kubernetes folder');
  const source = join(info.Dir, 'build', 'pause');
  const tag = /^TAG \?= (\S+)/m.exec(await readFile(join(source, 'Makefile'), 'utf8'))?.[1];
  if (!tag) throw new ControlPlaneError(`no TAG in ${source}/Makefile`);
  const dir = join(cacheRoot(env), 'control-plane', `pause-${tag}-${info.Version}`);
  const archive = join(dir, 'pause.tar');
  if (await pathExists(archive)) return { archive, tag };

  log?.(`building the pause image ${tag} from ${source}`);
  const work = join(dir, `tmp-${process.pid}`);
  await rm(work, { recursive: true, force: true });
  await mkdir(join(work, 'rootfs'), { recursive: true });
  try {
    const binary = join(work, 'rootfs', 'pause');
    const gccHint = 'gcc and the static C library are needed once: apt-get install gcc libc6-dev';
    await runCommand(
      'gcc',
      [
        '-Os',
        '-Wall',
        '-Werror',
        '-static',
        `-DVERSION=v${tag}-rtb`,
        '-o',
        binary,
        join(source, 'linux', 'pause.c'),
      ],
      { missingHint: gccHint },
    );
    await runCommand('strip', [binary], { missingHint: gccHint });
    const layout = join(work, 'oci');
    const image = `${layout}:${tag}`;
    const umociHint = 'umoci is needed: scripts/install-node-host.sh';
    await runCommand('umoci', ['init', '--layout', layout], { missingHint: umociHint });
    await runCommand('umoci', ['new', '--image', image]);
    await runCommand('umoci', [
      'insert',
      '--image',
      image,
      '--history.created_by',
      'pause.c',
      join(work, 'rootfs'),
      '/',
    ]);
    // As upstream's image: the nobody user, the pause binary as entrypoint.
    await runCommand('umoci', [
      'config',
      '--image',
      image,
      '--no-history',
      '--config.user',
      '65535:65535',
      '--config.entrypoint',
      '/pause',
    ]);
    await runCommand('tar', ['-C', layout, '-cf', join(work, 'pause.tar'), '.']);
    await rename(join(work, 'pause.tar'), archive);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return { archive, tag };
}
