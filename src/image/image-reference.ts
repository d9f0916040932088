/**
 * Container image references: parsing and canonical printing.
 *
 * The grammar and the normalisation are the ones container runtimes apply
 * (github.com/distribution/reference, `ParseNormalizedNamed`): the first path segment names a
 * registry when it contains `.` or `:`, is exactly `localhost`, or has an uppercase letter (a
 * repository path never has one); `index.docker.io` is Docker Hub's legacy name and reads as
 * `docker.io`; everything else is a Docker Hub repository, and a one-segment Docker Hub name gets
 * `library/`. The 255-character limit applies to the repository path, as in distribution.
 */

/** The registry Docker Hub images live on when a reference names no registry. */
export const DOCKER_HUB_REGISTRY = 'docker.io';

/** Docker Hub's legacy registry name; runtimes read it as {@link DOCKER_HUB_REGISTRY}. */
export const DOCKER_HUB_LEGACY_REGISTRY = 'index.docker.io';

/** The namespace Docker Hub puts single-segment repositories (`nginx`) into. */
export const DOCKER_HUB_LIBRARY = 'library';

/** A parsed image reference. `registry` and `repository` are always set, defaults applied. */
export interface ImageReference {
  /**
   * Registry host with optional port, e.g. `docker.io`, `localhost:5000`, `[::1]:5000`;
   * `index.docker.io` is read as `docker.io`.
   */
  readonly registry: string;
  /** Path inside the registry, e.g. `library/nginx`, `kyma-project/rt-bootstrapper/pause`. */
  readonly repository: string;
  readonly tag?: string | undefined;
  /** `algorithm:hex`, e.g. `sha256:…`. */
  readonly digest?: string | undefined;
  /** Whether the input named its registry; false when `docker.io` was implied. */
  readonly explicitRegistry: boolean;
}

/**
 * Longest reference read: a registry (253 characters and a port), a 255-character path, a
 * 128-character tag and a sha512 digest fit with room to spare. A Pod's creator writes the image,
 * so a longer one is refused before any of it is scanned (DESIGN §14).
 */
export const MAX_REFERENCE_LENGTH = 1024;
/** How much of an invalid reference an error message quotes. */
const QUOTED_LENGTH = 300;

/** Raised for input that is not a valid image reference; `input` is the offending reference. */
export class ImageReferenceError extends Error {
  override readonly name: string = 'ImageReferenceError';
  readonly input: string;

  constructor(input: string, reason: string, options?: ErrorOptions) {
    // A Pod's creator writes the image: the message quotes a bounded head of it.
    const quoted = input.length > QUOTED_LENGTH ? `${input.slice(0, QUOTED_LENGTH)}…` : input;
    super(`invalid image reference ${JSON.stringify(quoted)}: ${reason}`, options);
    this.input = input;
  }
}

/**
 * A well-formed reference whose digest algorithm runtimes do not know (they refuse to pull it).
 * Callers leave such an image as it is and warn; it is not a malformed reference.
 */
export class UnsupportedDigestError extends ImageReferenceError {
  override readonly name = 'UnsupportedDigestError';
  readonly algorithm: string;

  constructor(input: string, algorithm: string, options?: ErrorOptions) {
    super(input, `unsupported digest algorithm "${algorithm}"`, options);
    this.algorithm = algorithm;
  }
}

// distribution/reference grammar pieces. A domain component may carry uppercase letters (DNS is
// case-insensitive), a repository path may not.
// Written out (`component(.component)*` or `[ipv6]`, then `:port`) rather than composed with
// `new RegExp`, so the lint's ReDoS check reads it.
/** A registry host (`name[:port]`, `[ipv6][:port]`); RE2 reads it alike (the admission policy's CEL). */
export const REGISTRY_HOST_RE =
  /^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$/;
/** One repository path component. */
export const PATH_COMPONENT_RE = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
/** A tag. */
export const TAG_RE = /^\w[\w.-]{0,127}$/;
const DIGEST_RE = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
// The algorithms runtimes can verify (opencontainers/go-digest's registered ones; names are
// case-sensitive there) and their fixed, lowercase encodings.
/** The digest algorithms runtimes verify, each with its encoding. */
export const KNOWN_DIGEST_RE: Readonly<Record<string, RegExp>> = {
  sha256: /^[a-f0-9]{64}$/,
  sha384: /^[a-f0-9]{96}$/,
  sha512: /^[a-f0-9]{128}$/,
};
/** Longest repository path (without registry, tag and digest) runtimes accept. */
export const NAME_MAX_LENGTH = 255;
const WHITESPACE_RE = /\s/;
// distribution refuses a bare 64-hex name: it would be mistaken for an image ID.
/** A bare image ID, which is no reference. */
export const IMAGE_ID_RE = /^[a-f0-9]{64}$/;

/**
 * Whether a first path segment is read as a registry host rather than a Docker Hub namespace.
 * This is the rule runtimes apply; a registry that does not satisfy it cannot be addressed at all.
 */
export function looksLikeRegistryHost(segment: string): boolean {
  return (
    segment.includes('.') ||
    segment.includes(':') ||
    segment === 'localhost' ||
    segment.toLowerCase() !== segment
  );
}

/** The registry a host names: `index.docker.io` is Docker Hub, anything else is itself. */
export function canonicalRegistry(host: string): string {
  return host === DOCKER_HUB_LEGACY_REGISTRY ? DOCKER_HUB_REGISTRY : host;
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

function checkDigest(input: string, digest: string): void {
  if (!DIGEST_RE.test(digest)) throw new ImageReferenceError(input, `invalid digest "${digest}"`);
  const colon = digest.indexOf(':');
  const algorithm = digest.slice(0, colon);
  const known = Object.hasOwn(KNOWN_DIGEST_RE, algorithm) ? KNOWN_DIGEST_RE[algorithm] : undefined;
  if (known === undefined) throw new UnsupportedDigestError(input, algorithm);
  if (!known.test(digest.slice(colon + 1))) {
    throw new ImageReferenceError(
      input,
      `invalid digest "${digest}": wrong length or not lowercase hex for its algorithm`,
    );
  }
}

/**
 * Parses an image reference such as `nginx:1.25`, `localhost:5000/x`, `reg.io:443/a/b:t` or
 * `repo:tag@sha256:…`. Docker Hub defaults are applied: `nginx` is `docker.io/library/nginx`.
 *
 * @throws ImageReferenceError when the input is empty, contains whitespace, has an uppercase or
 * otherwise malformed repository path, a malformed registry, tag or digest, or is too long;
 * UnsupportedDigestError (a subclass) when the digest's algorithm is not one runtimes know.
 */
export function parseImageReference(input: string): ImageReference {
  if (input === '') throw new ImageReferenceError(input, 'empty');
  if (input.length > MAX_REFERENCE_LENGTH)
    throw new ImageReferenceError(input, `longer than ${MAX_REFERENCE_LENGTH} characters`);
  if (WHITESPACE_RE.test(input)) throw new ImageReferenceError(input, 'contains whitespace');
  if (IMAGE_ID_RE.test(input)) {
    throw new ImageReferenceError(input, 'a 64-character hexadecimal name is an image ID, not a reference');
  }

  let rest = input;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at !== -1) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    checkDigest(input, digest);
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

  let registry = DOCKER_HUB_REGISTRY;
  let repository = rest;
  let explicitRegistry = false;
  const slash = rest.indexOf('/');
  if (slash !== -1 && looksLikeRegistryHost(rest.slice(0, slash))) {
    const host = rest.slice(0, slash);
    if (!isValidRegistryHost(host)) throw new ImageReferenceError(input, `invalid registry "${host}"`);
    registry = canonicalRegistry(host);
    repository = rest.slice(slash + 1);
    explicitRegistry = true;
  }

  const problem = repositoryPathProblem(repository);
  if (problem !== undefined) throw new ImageReferenceError(input, problem);
  if (registry === DOCKER_HUB_REGISTRY && !repository.includes('/')) {
    repository = `${DOCKER_HUB_LIBRARY}/${repository}`;
  }
  if (repository.length > NAME_MAX_LENGTH) {
    throw new ImageReferenceError(input, `repository path longer than ${NAME_MAX_LENGTH} characters`);
  }

  return { registry, repository, tag, digest, explicitRegistry };
}

/** Prints a reference fully qualified: `registry/repository[:tag][@digest]`. */
export function formatImageReference(ref: ImageReference): string {
  const tag = ref.tag === undefined ? '' : `:${ref.tag}`;
  const digest = ref.digest === undefined ? '' : `@${ref.digest}`;
  return `${ref.registry}/${ref.repository}${tag}${digest}`;
}
