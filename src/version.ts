import { readFileSync } from 'node:fs';

/** What package.json says about this build: its name, version and where its image is released. */
export interface PackageIdentity {
  readonly name: string;
  readonly version: string;
  /** `config.imageRepository`: the registry path the image is pushed to (without the name). */
  readonly imageRepository: string;
}

let cached: PackageIdentity | undefined;

const field = (o: Record<string, unknown> | undefined, key: string, fallback: string): string => {
  const value = o?.[key];
  return typeof value === 'string' ? value : fallback;
};

/** package.json's identity, read once (works from src/ under tsx and from dist/). */
export function packageIdentity(): PackageIdentity {
  if (cached !== undefined) return cached;
  const parsed: unknown = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const pkg = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  const config =
    typeof pkg.config === 'object' && pkg.config !== null ? (pkg.config as Record<string, unknown>) : {};
  cached = {
    name: field(pkg, 'name', 'rt-bootstrapper'),
    version: field(pkg, 'version', '0.0.0'),
    imageRepository: field(config, 'imageRepository', ''),
  };
  return cached;
}

/** The version of this package. */
export const packageVersion = (): string => packageIdentity().version;

/**
 * The image reference of a release: `<config.imageRepository>/<name>:<version>`, the name and
 * tag scripts/build-image.sh gives the image it builds. `rtb render` and direct mode default to
 * this build's (`version` omitted).
 */
export function releaseImage(version = packageVersion()): string {
  const { name, imageRepository } = packageIdentity();
  return `${imageRepository === '' ? '' : `${imageRepository}/`}${name}:${version}`;
}
