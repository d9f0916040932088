/**
 * A copy-on-write editor for JSON documents that records each edit as an RFC 6902 operation.
 *
 * Why not diff afterwards (rfc6902's createPatch): the webhook knows exactly what it changes, so
 * recording the edits gives precise `add`/`replace`/`remove` operations without walking the whole
 * Pod twice, and without deep-cloning it: only the nodes on the path to an edit are copied, every
 * other subtree is shared with the input. The input is never modified.
 */

/** A JSON Patch operation as emitted here; assignable to rfc6902's `Operation`. */
export type PatchOperation =
  | { readonly op: 'add'; readonly path: string; readonly value: unknown }
  | { readonly op: 'replace'; readonly path: string; readonly value: unknown }
  | { readonly op: 'remove'; readonly path: string };

/** A path into a document: strings are object member names, numbers array indices. */
export type JsonPath = readonly (string | number)[];

type JsonNode = Record<string, unknown> | unknown[];

function isNode(value: unknown): value is JsonNode {
  return typeof value === 'object' && value !== null;
}

const NEEDS_ESCAPE = /[~/]/;
// The tokens that need escaping are annotation keys, and nearly always the same few (the marks
// every changed Pod gets); a small cache spares rebuilding them on every request.
const ESCAPED_CACHE_SIZE = 64;
const escaped = new Map<string, string>();

/** Escapes one JSON-pointer reference token (RFC 6901): `~` → `~0`, then `/` → `~1`. */
export function escapePointerToken(token: string): string {
  // Most tokens (field names, indices) need nothing; skip the two scans for them.
  if (!NEEDS_ESCAPE.test(token)) return token;
  let out = escaped.get(token);
  if (out === undefined) {
    out = token.replaceAll('~', '~0').replaceAll('/', '~1');
    if (escaped.size >= ESCAPED_CACHE_SIZE) escaped.clear();
    escaped.set(token, out);
  }
  return out;
}

/** Formats a path as a JSON pointer, e.g. `['metadata','annotations','a/b']` → `/metadata/annotations/a~1b`. */
export function toJsonPointer(path: JsonPath): string {
  let out = '';
  for (const token of path)
    out += `/${typeof token === 'number' ? String(token) : escapePointerToken(token)}`;
  return out;
}

function describe(path: JsonPath): string {
  return toJsonPointer(path) || '(root)';
}

// Plain assignment of "__proto__" would change the prototype instead of adding a member.
function setMember(node: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(node, key, { value, writable: true, enumerable: true, configurable: true });
  } else {
    node[key] = value;
  }
}

function getChild(node: JsonNode, token: string | number): unknown {
  if (Array.isArray(node)) return typeof token === 'number' ? node[token] : undefined;
  return typeof token === 'string' && Object.hasOwn(node, token) ? node[token] : undefined;
}

/**
 * Clones plain JSON data (objects, arrays, primitives); `undefined` members are dropped as JSON
 * would drop them. `visit` sees every object and array created, so callers can track them.
 */
export function cloneJson<V>(value: V, visit?: (created: object) => void): V {
  if (!isNode(value)) return value;
  if (Array.isArray(value)) {
    const copy: unknown[] = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = cloneJson<unknown>(value[i], visit);
    visit?.(copy);
    return copy as V;
  }
  const source = value as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (const key in source) {
    if (!Object.hasOwn(source, key)) continue;
    const member = source[key];
    if (member !== undefined) setMember(copy, key, cloneJson(member, visit));
  }
  visit?.(copy);
  return copy as V;
}

/**
 * Edits a copy of `original` and records the edits as JSON Patch operations against it.
 *
 * `current` is the edited document; it shares unchanged subtrees with the original, so treat
 * both as immutable and make every change through `set`, `append` and `remove`.
 */
export class PatchBuilder<T extends object> {
  readonly #original: T;
  #root: JsonNode;
  // Nodes this builder created (copies and inserted values); only these may be written to.
  // A Set, not a WeakSet: the builder lives for one request and Set lookups are cheaper.
  readonly #owned = new Set<object>();
  readonly #operations: PatchOperation[] = [];

  constructor(original: T) {
    this.#original = original;
    this.#root = original as unknown as JsonNode;
  }

  /** The untouched input document. */
  get original(): T {
    return this.#original;
  }

  /** The document with every edit so far applied. */
  get current(): T {
    return this.#root as unknown as T;
  }

  /** The operations that turn `original` into `current`, in order. */
  get operations(): readonly PatchOperation[] {
    return this.#operations;
  }

  /** Whether any edit was made. */
  get changed(): boolean {
    return this.#operations.length > 0;
  }

  /**
   * Sets the value at `path`: `replace` when the member exists, `add` otherwise. Absent parent
   * objects are created, emitting one `add` of the whole missing subtree (e.g. no
   * `metadata.annotations` → `add /metadata/annotations {…}`). Array parents are never created
   * (an index into a missing array has no meaning); use `append` for arrays.
   *
   * @throws TypeError when the path runs through a non-container value or a missing array.
   */
  set(path: JsonPath, value: unknown): void {
    if (path.length === 0) throw new TypeError('cannot set the document root');
    const { node, depth } = this.#descend(path, path.length - 1);
    // `node` is the deepest existing container; path[depth] is the first token below it.
    const token = path[depth] as string | number;
    let inserted = value;
    for (let i = path.length - 1; i > depth; i--) {
      const key = path[i];
      if (typeof key !== 'string') {
        throw new TypeError(`cannot create array ${describe(path.slice(0, i))} to set ${describe(path)}`);
      }
      const wrapper: Record<string, unknown> = {};
      setMember(wrapper, key, inserted);
      inserted = wrapper;
    }
    const existing = getChild(node, token);
    if (depth < path.length - 1 && existing !== undefined && existing !== null) {
      throw new TypeError(
        `cannot set ${describe(path)}: ${describe(path.slice(0, depth + 1))} is not an object`,
      );
    }
    if (Array.isArray(node) && (typeof token !== 'number' || token > node.length || token < 0)) {
      throw new TypeError(`cannot set ${describe(path)}: no such array index`);
    }
    this.#put(node, token, inserted);
    const op = existing === undefined ? 'add' : 'replace';
    this.#operations.push({ op, path: toJsonPointer(path.slice(0, depth + 1)), value: cloneJson(inserted) });
  }

  /**
   * Appends `value` to the array at `path` (`add …/-`), or creates the array as `[value]` when
   * it is absent (`add …` with the whole array), creating absent parent objects as `set` does.
   */
  append(path: JsonPath, value: unknown): void {
    const { node, depth } = this.#descend(path, path.length);
    if (depth < path.length) {
      this.set(path, [value]);
      return;
    }
    if (!Array.isArray(node)) throw new TypeError(`cannot append to ${describe(path)}: not an array`);
    node.push(this.#adopt(value));
    this.#operations.push({ op: 'add', path: `${toJsonPointer(path)}/-`, value: cloneJson(value) });
  }

  /**
   * Removes the member or array element at `path`.
   *
   * @throws TypeError when there is nothing at `path`.
   */
  remove(path: JsonPath): void {
    if (path.length === 0) throw new TypeError('cannot remove the document root');
    const { node, depth } = this.#descend(path, path.length - 1);
    const token = path[path.length - 1] as string | number;
    if (depth < path.length - 1 || getChild(node, token) === undefined) {
      throw new TypeError(`cannot remove ${describe(path)}: not present`);
    }
    if (Array.isArray(node)) node.splice(token as number, 1);
    else Reflect.deleteProperty(node, token);
    this.#operations.push({ op: 'remove', path: toJsonPointer(path) });
  }

  #own(node: JsonNode): JsonNode {
    if (this.#owned.has(node)) return node;
    const copy: JsonNode = Array.isArray(node) ? node.slice() : { ...node };
    this.#owned.add(copy);
    return copy;
  }

  #adopt(value: unknown): unknown {
    return cloneJson(value, (created) => this.#owned.add(created));
  }

  #put(node: JsonNode, token: string | number, value: unknown): void {
    const adopted = this.#adopt(value);
    if (Array.isArray(node)) node[token as number] = adopted;
    else setMember(node, token as string, adopted);
  }

  /**
   * Walks at most `limit` tokens down `path`, replacing every node on the way by an owned copy.
   * Returns the deepest owned container reached and how many tokens were consumed.
   */
  #descend(path: JsonPath, limit: number): { node: JsonNode; depth: number } {
    this.#root = this.#own(this.#root);
    let node = this.#root;
    let depth = 0;
    while (depth < limit) {
      const token = path[depth] as string | number;
      const child = getChild(node, token);
      if (!isNode(child)) break;
      const owned = this.#own(child);
      if (owned !== child) {
        if (Array.isArray(node)) node[token as number] = owned;
        else setMember(node, token as string, owned);
      }
      node = owned;
      depth++;
    }
    return { node, depth };
  }
}
