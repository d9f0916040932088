/**
 * The webhook config's `overrideExclusions` (ours): images the registry overrides never rewrite.
 *
 * Each entry is read as an image reference the way container runtimes read it (./image-reference.ts:
 * `nginx` is `docker.io/library/nginx`, `index.docker.io` is `docker.io`), and is either
 * - a repository prefix (no tag, no digest): every image of that repository or of one below it,
 *   at a path boundary (`docker.io/library/nginx` keeps `nginx:1` and `nginx/x`, not `nginx-foo`);
 * - an image (a tag, a digest or both): that repository only, where each part the entry names is
 *   the image's (an image with neither tag nor digest is `:latest`, as runtimes pull it);
 * - a path ending in `/*`: every repository below that path, read without Docker Hub's `library/`
 *   (`bitnami/*` keeps `docker.io/bitnami/redis`, which the prefix `bitnami`, read as an image
 *   reference, `docker.io/library/bitnami`, does not).
 * Registries compare as the overrides' keys do: exactly, port included, no case folding.
 * A whole registry is not an entry (`ghcr.io` alone is the Docker Hub image `library/ghcr.io`, and
 * `ghcr.io/*` names no path, so both are refused): such a registry is kept by not overriding it.
 */
import {
  canonicalRegistry,
  DOCKER_HUB_LIBRARY,
  DOCKER_HUB_REGISTRY,
  type ImageReference,
  ImageReferenceError,
  isValidRegistryHost,
  looksLikeRegistryHost,
  MAX_REFERENCE_LENGTH,
  NAME_MAX_LENGTH,
  parseImageReference,
  repositoryPathProblem,
} from './image-reference.js';

/**
 * Most entries a config may list: the webhook checks them for every image it admits, and the
 * admission policy's CEL scans them per image (both linear in their number).
 */
export const MAX_OVERRIDE_EXCLUSIONS = 64;

/** The tag runtimes pull where a reference names neither tag nor digest. */
const DEFAULT_TAG = 'latest';

/** The suffix of an entry that keeps every repository below its path. */
export const BELOW_SUFFIX = '/*';

const WHOLE_REGISTRY = 'a registry is kept by giving it no override';

/** One entry, read. `below`: the repositories under `path/`, not `path` itself. */
export type OverrideExclusion =
  | { readonly kind: 'repository'; readonly registry: string; readonly repository: string }
  | { readonly kind: 'below'; readonly registry: string; readonly path: string }
  | {
      readonly kind: 'image';
      readonly registry: string;
      readonly repository: string;
      readonly tag?: string | undefined;
      readonly digest?: string | undefined;
    };

/** `path/*`: the first segment is a registry where runtimes would read it as one, as for images. */
function parseBelow(entry: string): OverrideExclusion {
  if (entry.length > MAX_REFERENCE_LENGTH)
    throw new ImageReferenceError(entry, `longer than ${MAX_REFERENCE_LENGTH} characters`);
  const name = entry.slice(0, -BELOW_SUFFIX.length);
  const slash = name.indexOf('/');
  const first = slash === -1 ? name : name.slice(0, slash);
  if (slash === -1 && looksLikeRegistryHost(first))
    throw new ImageReferenceError(entry, `names no path under registry "${first}"; ${WHOLE_REGISTRY}`);
  let registry = DOCKER_HUB_REGISTRY;
  let path = name;
  if (slash !== -1 && looksLikeRegistryHost(first)) {
    if (!isValidRegistryHost(first)) throw new ImageReferenceError(entry, `invalid registry "${first}"`);
    registry = canonicalRegistry(first);
    path = name.slice(slash + 1);
  }
  const problem = repositoryPathProblem(path);
  if (problem !== undefined) throw new ImageReferenceError(entry, problem);
  if (path.length + 2 > NAME_MAX_LENGTH)
    throw new ImageReferenceError(entry, `no repository below a path of ${path.length} characters`);
  return { kind: 'below', registry, path };
}

/**
 * Reads one entry.
 *
 * @throws ImageReferenceError when it is no image reference (nor a path and `/*`), or names only
 * a registry.
 */
export function parseOverrideExclusion(entry: string): OverrideExclusion {
  if (entry.endsWith(BELOW_SUFFIX)) return parseBelow(entry);
  const ref = parseImageReference(entry);
  // Without a `/` the one name is a Docker Hub repository; a host-like one was meant as a registry.
  if (!ref.explicitRegistry && !entry.includes('/')) {
    const name = ref.repository.slice(DOCKER_HUB_LIBRARY.length + 1);
    if (looksLikeRegistryHost(name))
      throw new ImageReferenceError(
        entry,
        `reads as the Docker Hub image "${DOCKER_HUB_REGISTRY}/${ref.repository}", not a registry; ` +
          WHOLE_REGISTRY,
      );
  }
  const { registry, repository, tag, digest } = ref;
  return tag === undefined && digest === undefined
    ? { kind: 'repository', registry, repository }
    : { kind: 'image', registry, repository, tag, digest };
}

/** Why an entry is refused, or undefined when it is fine. */
export function overrideExclusionProblem(entry: string): string | undefined {
  try {
    parseOverrideExclusion(entry);
    return undefined;
  } catch (error) {
    if (error instanceof ImageReferenceError) return error.message;
    throw error;
  }
}

/** Whether an image (parsed) is excluded. */
export type ExclusionMatcher = (ref: ImageReference) => boolean;

/**
 * A repository-path trie per registry: `end` marks a repository prefix entry (it and below),
 * `below` a `path/*` entry (only below).
 */
interface Node {
  end: boolean;
  below: boolean;
  readonly children: Map<string, Node>;
}

const newNode = (): Node => ({ end: false, below: false, children: new Map() });

/**
 * Prepares the matching of `entries` (read once; the matcher is reused for every image). A match
 * walks the image's repository path once and looks its repository up once: linear in the image.
 *
 * @throws ImageReferenceError for an entry parseOverrideExclusion refuses (the config loader
 * refuses such a config first).
 */
export function createExclusionMatcher(entries: readonly string[]): ExclusionMatcher {
  if (entries.length === 0) return () => false;
  // Maps, not objects: a registry or repository named "__proto__" is a plain key.
  const prefixes = new Map<string, Node>();
  const images = new Map<
    string,
    { readonly tag?: string | undefined; readonly digest?: string | undefined }[]
  >();
  for (const entry of entries) {
    const e = parseOverrideExclusion(entry);
    if (e.kind === 'image') {
      const key = `${e.registry}/${e.repository}`;
      const list = images.get(key) ?? [];
      list.push({ tag: e.tag, digest: e.digest });
      images.set(key, list);
      continue;
    }
    let node: Node = prefixes.get(e.registry) ?? newNode();
    prefixes.set(e.registry, node);
    for (const component of (e.kind === 'below' ? e.path : e.repository).split('/')) {
      const child: Node = node.children.get(component) ?? newNode();
      node.children.set(component, child);
      node = child;
    }
    if (e.kind === 'below') node.below = true;
    else node.end = true;
  }

  return (ref) => {
    let node = prefixes.get(ref.registry);
    if (node !== undefined) {
      const components = ref.repository.split('/');
      for (const [i, component] of components.entries()) {
        node = node.children.get(component);
        if (node === undefined) break;
        if (node.end || (node.below && i < components.length - 1)) return true;
      }
    }
    const wanted = images.get(`${ref.registry}/${ref.repository}`);
    if (wanted === undefined) return false;
    const tag = ref.tag ?? (ref.digest === undefined ? DEFAULT_TAG : undefined);
    return wanted.some(
      (e) => (e.tag === undefined || e.tag === tag) && (e.digest === undefined || e.digest === ref.digest),
    );
  };
}
