/**
 * Registry rewriting by the webhook config's `overrides`: `{ "<source host>": "<target>" }`, where a
 * target is a registry host optionally followed by a path prefix (`mirror.example.com/dockerhub`).
 */
import {
  canonicalRegistry,
  DOCKER_HUB_LEGACY_REGISTRY,
  DOCKER_HUB_REGISTRY,
  ImageReferenceError,
  isValidRegistryHost,
  NAME_MAX_LENGTH,
  looksLikeRegistryHost,
  parseImageReference,
  repositoryPathProblem,
} from './image-reference.js';
import { createExclusionMatcher } from './override-exclusions.js';

/** An override target split into its host and its (possibly empty) path prefix. */
export interface RegistryTarget {
  readonly host: string;
  /** Path prefix without leading or trailing slash; `''` when the target is a bare host. */
  readonly pathPrefix: string;
}

/** Rewrites one image; returns the new image, or undefined when the image stays as it is. */
export type ImageRewriter = (image: string) => string | undefined;

/**
 * Checks an override key, returning why it cannot be a source registry or undefined when fine.
 * A key that runtimes would not read as a registry host could never match an image, so such an
 * override is never used (the config loader warns about it).
 */
export function overrideSourceProblem(key: string): string | undefined {
  if (!isValidRegistryHost(key)) return 'not a registry host (host or host:port, no path)';
  if (!looksLikeRegistryHost(key))
    return 'never matches: a registry host contains "." or ":" or is "localhost"';
  return undefined;
}

function splitTarget(target: string): RegistryTarget {
  const slash = target.indexOf('/');
  return slash === -1
    ? { host: target, pathPrefix: '' }
    : { host: target.slice(0, slash), pathPrefix: target.slice(slash + 1) };
}

/**
 * Checks an override target (`host[:port][/path]`), returning why it is invalid or undefined.
 * The host must be one runtimes read as a registry: an image rewritten to `mirror/x` would be
 * pulled from the Docker Hub namespace `mirror`, which anyone may own, so such an override is
 * never used (the config loader warns about it).
 */
export function overrideTargetProblem(target: string): string | undefined {
  const { host, pathPrefix } = splitTarget(target);
  const hostProblem = overrideSourceProblem(host);
  if (hostProblem !== undefined) return `target host "${host}": ${hostProblem}`;
  if (target.includes('/')) {
    const pathProblem = repositoryPathProblem(pathPrefix);
    if (pathProblem !== undefined) return `target path: ${pathProblem}`;
  }
  return undefined;
}

/** Why one override (by its key) will not take effect. */
export interface OverrideFinding {
  readonly key: string;
  readonly message: string;
}

/**
 * Every override that will not take effect, and why: a key or target that is not registry-shaped
 * (see overrideSourceProblem and overrideTargetProblem), or `index.docker.io` beside `docker.io`.
 */
export function overrideFindings(overrides: Readonly<Record<string, string>>): OverrideFinding[] {
  const findings: OverrideFinding[] = [];
  for (const [key, target] of Object.entries(overrides)) {
    const keyProblem = overrideSourceProblem(key);
    const problem = keyProblem === undefined ? overrideTargetProblem(target) : `key: ${keyProblem}`;
    if (problem !== undefined) findings.push({ key, message: `${problem}; this override is never used` });
  }
  if (Object.hasOwn(overrides, DOCKER_HUB_LEGACY_REGISTRY) && Object.hasOwn(overrides, DOCKER_HUB_REGISTRY)) {
    findings.push({
      key: DOCKER_HUB_LEGACY_REGISTRY,
      message: `names Docker Hub as "${DOCKER_HUB_REGISTRY}" does, whose target is used`,
    });
  }
  return findings;
}

/**
 * Splits and checks an override target (`host[:port][/path]`).
 *
 * @throws ImageReferenceError when overrideTargetProblem finds a problem.
 */
export function parseRegistryTarget(target: string): RegistryTarget {
  const problem = overrideTargetProblem(target);
  if (problem !== undefined) throw new ImageReferenceError(target, problem);
  return splitTarget(target);
}

function isAtTarget(registry: string, repository: string, target: RegistryTarget): boolean {
  if (registry !== canonicalRegistry(target.host)) return false;
  if (target.pathPrefix === '') return true;
  return repository === target.pathPrefix || repository.startsWith(`${target.pathPrefix}/`);
}

/**
 * The overrides that can take effect, by canonical source registry: entries whose key or target
 * is not registry-shaped are left out (they could never match, or would send images to Docker
 * Hub), and of `docker.io` and its legacy name `index.docker.io` the former wins.
 */
export function usableOverrides(overrides: Readonly<Record<string, string>>): Map<string, RegistryTarget> {
  // A Map (not the object) so keys such as "__proto__" or "constructor" cannot hit the prototype.
  const bySource = new Map<string, RegistryTarget>();
  for (const [source, target] of Object.entries(overrides)) {
    if (overrideSourceProblem(source) !== undefined || overrideTargetProblem(target) !== undefined) continue;
    const registry = canonicalRegistry(source);
    if (registry !== source && bySource.has(registry)) continue;
    bySource.set(registry, splitTarget(target));
  }
  return bySource;
}

/**
 * Prepares a rewriter for a set of overrides, reading the targets once (the result is meant to be
 * reused for every image of every request under one config).
 *
 * Semantics:
 * - the source registry is matched exactly (port included, no case folding) after the runtimes'
 *   normalisation: an image without an explicit registry, and one on `index.docker.io`, has
 *   registry `docker.io` and matches an override key `docker.io` (or `index.docker.io`);
 * - the repository path is kept as runtimes read it, so `nginx` becomes `<target>/library/nginx`;
 * - an image already under any target (host equal and path inside the prefix) is left alone, so
 *   a second pass over a rewritten Pod is a no-op; this check wins over a matching key;
 * - a non-matching image is returned as undefined, never canonicalised (`nginx` stays `nginx`);
 * - an image `exclusions` names (the config's `overrideExclusions`, ./override-exclusions.ts) is
 *   left alone whatever the overrides say;
 * - overrides that cannot take effect are skipped (see usableOverrides), never an error.
 *
 * The returned function throws ImageReferenceError for an unparseable image (and its subclass
 * UnsupportedDigestError for a digest algorithm runtimes do not know), so callers can report it;
 * the rewriter itself never produces an invalid reference (it throws instead, with the parse error
 * as `cause`). It throws ImageReferenceError itself for an entry of `exclusions` that is no
 * reference (the config loader refuses such a config first).
 */
export function createRegistryRewriter(
  overrides: Readonly<Record<string, string>>,
  exclusions: readonly string[] = [],
): ImageRewriter {
  const bySource = usableOverrides(overrides);
  const excluded = createExclusionMatcher(exclusions);
  if (bySource.size === 0) {
    // Still parse, so an invalid image is reported the same way with and without overrides.
    return (image) => {
      parseImageReference(image);
      return undefined;
    };
  }
  const targets = [...bySource.values()];

  return (image) => {
    const ref = parseImageReference(image);
    if (targets.some((t) => isAtTarget(ref.registry, ref.repository, t))) return undefined;
    const target = bySource.get(ref.registry);
    if (target === undefined || excluded(ref)) return undefined;

    const prefix = target.pathPrefix === '' ? '' : `${target.pathPrefix}/`;
    const tag = ref.tag === undefined ? '' : `:${ref.tag}`;
    const digest = ref.digest === undefined ? '' : `@${ref.digest}`;
    const rewritten = `${target.host}/${prefix}${ref.repository}${tag}${digest}`;
    // Target and repository are valid, so only the path length can break; re-parse just then,
    // to hand the precise parse error on as the cause.
    if (prefix.length + ref.repository.length > NAME_MAX_LENGTH) {
      let cause: unknown;
      try {
        parseImageReference(rewritten);
      } catch (error) {
        cause = error;
      }
      throw new ImageReferenceError(image, `rewriting to "${rewritten}" gives an invalid reference`, {
        cause,
      });
    }
    return rewritten === image ? undefined : rewritten;
  };
}

/**
 * Rewrites the registry of one image by `overrides` (see createRegistryRewriter for the rules).
 * Returns undefined when the image is unchanged (also where `exclusions` names it). Seed example: with `{ "replace.me": "ghcr.io" }`,
 * `replace.me/kyma-project/rt-bootstrapper/pause:e2e` becomes `ghcr.io/kyma-project/rt-bootstrapper/pause:e2e`.
 *
 * @throws ImageReferenceError for an unparseable image.
 */
export function rewriteImage(
  image: string,
  overrides: Readonly<Record<string, string>>,
  exclusions: readonly string[] = [],
): string | undefined {
  return createRegistryRewriter(overrides, exclusions)(image);
}
