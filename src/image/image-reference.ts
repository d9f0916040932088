/**
 * Container image references: parsing and canonical printing.
 *
 * The grammar follows the one container runtimes use (github.com/distribution/reference), with the
 * registry-detection rule of this project: the first path segment names a registry only when it
 * contains `.` or `:` or is exactly `localhost`. Everything else is a Docker Hub repository.
 */

/** The registry Docker Hub images live on when a reference names no registry. */
export const DOCKER_HUB_REGISTRY = 'docker.io';

/** The namespace Docker Hub puts single-segment repositories (`nginx`) into. */
export const DOCKER_HUB_LIBRARY = 'library';

/** A parsed image reference. `registry` and `repository` are always set, defaults applied. */
export interface ImageReference {
  /** Registry host with optional port, e.g. `docker.io`, `localhost:5000`, `[::1]:5000`. */
  readonly registry: string;
  /** Path inside the registry, e.g. `library/nginx`, `kyma-project/rt-bootstrapper/pause`. */
  readonly repository: string;
  readonly tag?: string | undefined;
  /** `algorithm:hex`, e.g. `sha256:…`. */
  readonly digest?: string | undefined;
  /** Whether the input named its registry; false when `docker.io` was implied. */
  readonly explicitRegistry: boolean;
}

/** Raised for input that is not a valid image reference; `input` is the offending reference. */
export class ImageReferenceError extends Error {
  override readonly name = 'ImageReferenceError';
  readonly input: string;

  constructor(input: string, reason: string, options?: ErrorOptions) {
    super(`invalid image reference ${JSON.stringify(input)}: ${reason}`, options);
    this.input = input;
  }
}

// distribution/reference grammar pieces. A domain component may carry uppercase letters (DNS is
// case-insensitive), a repository path may not.
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const IPV6_HOST = '\\[[a-fA-F0-9:]+\\]';
const REGISTRY_HOST_RE = new RegExp(
  `^(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|${IPV6_HOST})(?::[0-9]+)?$`,
);
const PATH_COMPONENT_RE = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG_RE = /^\w[\w.-]{0,127}$/;
const DIGEST_RE = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
// Registered algorithms have a fixed, lowercase encoding (opencontainers/go-digest); a runtime
// refuses anything else, so we do too rather than pass on a reference that cannot be pulled.
const KNOWN_DIGEST_RE: Readonly<Record<string, RegExp>> = {
  sha256: /^[a-f0-9]{64}$/,
  sha384: /^[a-f0-9]{96}$/,
  sha512: /^[a-f0-9]{128}$/,
};
/** Longest name (registry and repository, without tag and digest) runtimes accept. */
export const NAME_MAX_LENGTH = 255;
const WHITESPACE_RE = /\s/;

/**
 * Whether a first path segment is read as a registry host rather than a Docker Hub namespace.
 * This is the rule runtimes apply; a registry that does not satisfy it cannot be addressed at all.
 */
export function looksLikeRegistryHost(segment: string): boolean {
  return segment.includes('.') || segment.includes(':') || segment === 'localhost';
}

/** Whether `host` is a syntactically valid registry host (`name[:port]` or `[ipv6][:port]`). */
export function isValidRegistryHost(host: string): boolean {
  return REGISTRY_HOST_RE.test(host);
}

/**
 * Checks a repository path (`a/b/c`), returning why it is invalid or undefined when it is fine.
 * Exported so override targets with a path prefix are held to the same rules as image paths.
 */
export function repositoryPathProblem(path: string): string | undefined {
  if (path === '') return 'repository path is empty';
  for (const component of path.split('/')) {
    if (PATH_COMPONENT_RE.test(component)) continue;
    if (component === '') return 'repository path has an empty component';
    if (component !== component.toLowerCase()) return `repository must be lowercase, got "${component}"`;
    return `invalid repository path component "${component}"`;
  }
  return undefined;
}

function digestProblem(digest: string): string | undefined {
  if (!DIGEST_RE.test(digest)) return `invalid digest "${digest}"`;
  const colon = digest.indexOf(':');
  const known = KNOWN_DIGEST_RE[digest.slice(0, colon).toLowerCase()];
  if (known !== undefined && !known.test(digest.slice(colon + 1))) {
    return `invalid digest "${digest}": wrong length or not lowercase hex for its algorithm`;
  }
  return undefined;
}

/**
 * Parses an image reference such as `nginx:1.25`, `localhost:5000/x`, `reg.io:443/a/b:t` or
 * `repo:tag@sha256:…`. Docker Hub defaults are applied: `nginx` is `docker.io/library/nginx`.
 *
 * @throws ImageReferenceError when the input is empty, contains whitespace, has an uppercase or
 * otherwise malformed repository path, a malformed registry, tag or digest, or is too long.
 */
export function parseImageReference(input: string): ImageReference {
  if (input === '') throw new ImageReferenceError(input, 'empty');
  if (WHITESPACE_RE.test(input)) throw new ImageReferenceError(input, 'contains whitespace');

  let rest = input;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    const problem = digestProblem(digest);
    if (problem !== undefined) throw new ImageReferenceError(input, problem);
  }

  // A colon after the last slash separates the tag; one before it belongs to a registry port.
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG_RE.test(tag)) throw new ImageReferenceError(input, `invalid tag "${tag}"`);
  }

  if (rest === '') throw new ImageReferenceError(input, 'no repository name');
  if (rest.length > NAME_MAX_LENGTH) {
    throw new ImageReferenceError(input, `name longer than ${NAME_MAX_LENGTH} characters`);
  }

  let registry = DOCKER_HUB_REGISTRY;
  let repository = rest;
  let explicitRegistry = false;
  const slash = rest.indexOf('/');
  if (slash !== -1 && looksLikeRegistryHost(rest.slice(0, slash))) {
    registry = rest.slice(0, slash);
    repository = rest.slice(slash + 1);
    explicitRegistry = true;
    if (!isValidRegistryHost(registry))
      throw new ImageReferenceError(input, `invalid registry "${registry}"`);
  }

  const problem = repositoryPathProblem(repository);
  if (problem !== undefined) throw new ImageReferenceError(input, problem);
  if (registry === DOCKER_HUB_REGISTRY && !repository.includes('/')) {
    repository = `${DOCKER_HUB_LIBRARY}/${repository}`;
  }

  return { registry, repository, tag, digest, explicitRegistry };
}

/** Prints a reference fully qualified: `registry/repository[:tag][@digest]`. */
export function formatImageReference(ref: ImageReference): string {
  const tag = ref.tag === undefined ? '' : `:${ref.tag}`;
  const digest = ref.digest === undefined ? '' : `@${ref.digest}`;
  return `${ref.registry}/${ref.repository}${tag}${digest}`;
}
