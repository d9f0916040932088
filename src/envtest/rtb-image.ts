import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from './cache-root.js';
import { ControlPlaneError } from './errors.js';
import { pathExists } from './path-exists.js';
import { runCommand } from './run-command.js';

/** The rtb image as an OCI image layout on disk (built by scripts/build-image.sh). */
export interface RtbImage {
  /** The OCI image layout folder (`oci-layout`, `index.json`, `blobs/`). */
  readonly layoutDir: string;
  /** Repository name, from package.json `name`. */
  readonly name: string;
  /** Tag, from package.json `version`. */
  readonly tag: string;
  readonly built: boolean;
}

/** Options for resolving the image. */
export interface ResolveImageOptions {
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

const packageRoot = fileURLToPath(new URL('../../', import.meta.url));
const buildScript = join(packageRoot, 'scripts', 'build-image.sh');

/** `<registry>/<name>:<tag>`, the reference a registry serves the image under. */
export function imageReference(image: Pick<RtbImage, 'name' | 'tag'>, registry: string): string {
  return `${registry}/${image.name}:${image.tag}`;
}

/**
 * The rtb image from the cache, built on a miss. The key covers everything that goes into it
 * (the script, package.json, the lock file, src/ and config/), so any change of the project
 * rebuilds it; the Debian root filesystem has a cache of its own inside the script.
 */
export async function resolveRtbImage(options: ResolveImageOptions = {}): Promise<RtbImage> {
  const env = options.env ?? process.env;
  const pkg = JSON.parse(await readFile(join(packageRoot, 'package.json'), 'utf8')) as {
    name?: unknown;
    version?: unknown;
  };
  if (typeof pkg.name !== 'string' || typeof pkg.version !== 'string')
    throw new ControlPlaneError('package.json lacks name or version');
  const key = await inputDigest();
  const imageRoot = join(cacheRoot(env), 'image');
  const dirName = `${pkg.name}-${pkg.version}-${key}`;
  const layoutDir = join(imageRoot, dirName, 'oci');
  const image = { layoutDir, name: pkg.name, tag: pkg.version };
  if (await pathExists(join(layoutDir, 'index.json'))) return { ...image, built: false };

  await mkdir(imageRoot, { recursive: true });
  options.log?.(`building the ${pkg.name}:${pkg.version} image (cached in ${layoutDir})`);
  const started = Date.now();
  await runCommand(
    'bash',
    [buildScript, '--out', layoutDir, '--rootfs-cache', join(imageRoot, 'rootfs'), '--tag', pkg.version],
    { cwd: packageRoot, env, showStdout: true, showStderr: true },
  );
  options.log?.(`built the image in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  // One image per project version and content is enough: drop older builds.
  for (const entry of await readdir(imageRoot)) {
    if (entry.startsWith(`${pkg.name}-`) && entry !== dirName)
      await rm(join(imageRoot, entry), { recursive: true, force: true });
  }
  return { ...image, built: true };
}

async function inputDigest(): Promise<string> {
  const hash = createHash('sha256');
  const files = [
    buildScript,
    join(packageRoot, 'scripts', 'build-fips-provider.sh'),
    join(packageRoot, 'package.json'),
    join(packageRoot, 'package-lock.json'),
    join(packageRoot, 'tsconfig.json'),
    join(packageRoot, 'tsconfig.build.json'),
    ...(await listFiles(join(packageRoot, 'src'))),
    ...(await listFiles(join(packageRoot, 'config'))),
  ];
  for (const file of files) {
    hash
      .update(relative(packageRoot, file))
      .update('\0')
      .update(await readFile(file))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 12);
}

async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}
