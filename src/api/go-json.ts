/**
 * Two ways Go's `encoding/json` reads a document more leniently than `JSON.parse`, reproduced
 * so that every config the upstream Go implementation accepts is accepted here too:
 * - `json.Decoder.Decode` reads the first JSON value and ignores whatever follows it;
 * - a JSON key matches a struct field case-insensitively when no key matches it exactly
 *   (`"AvailableFeatures"` fills `availableFeatures`).
 */
import { isJsonObject } from './json-object.js';

/** The first JSON value of a text, and whether anything but whitespace followed it. */
export interface FirstJsonValue {
  readonly value: unknown;
  readonly trailing: boolean;
}

const JSON_WHITESPACE = new Set([' ', '\t', '\n', '\r']);

// Where the object or array starting at `start` ends (exclusive), or -1 when it does not.
function endOfContainer(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
    } else if (c === '{' || c === '[') {
      depth++;
    } else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/**
 * Parses `text` as Go's `json.Decoder.Decode` reads it: the first value counts and anything after
 * it is ignored. A text that is one JSON value parses exactly as with `JSON.parse`; the lenient
 * path is only taken when that fails, so normal configs cost nothing extra.
 *
 * @throws SyntaxError (from `JSON.parse`) when the first value itself is not valid JSON.
 */
export function parseFirstJsonValue(text: string): FirstJsonValue {
  try {
    return { value: JSON.parse(text) as unknown, trailing: false };
  } catch (error) {
    let start = 0;
    while (start < text.length && JSON_WHITESPACE.has(text[start] ?? '')) start++;
    const opener = text[start];
    // Only an object or array can be followed by more text and still be read by Go; a scalar
    // first value is refused by the config's shape anyway.
    const end = opener === '{' || opener === '[' ? endOfContainer(text, start) : -1;
    if (end === -1 || end === text.length) throw error;
    const value = JSON.parse(text.slice(0, end)) as unknown;
    return { value, trailing: text.slice(end).trim() !== '' };
  }
}

// Go compares field names with Unicode simple case folding; for ASCII field names that is:
// a key character matches when it equals the field's character in lower or in upper case
// (which also lets the Kelvin sign match "k" and the long s match "s", as in Go).
function foldEquals(key: string, field: string): boolean {
  const keyChars = [...key];
  if (keyChars.length !== field.length) return false;
  return keyChars.every((c, i) => {
    const f = field[i] ?? '';
    return c === f || c.toLowerCase() === f.toLowerCase() || c.toUpperCase() === f.toUpperCase();
  });
}

/** A key that was read as a known field under another spelling. */
export interface FoldedKey {
  readonly key: string;
  readonly field: string;
}

/**
 * Returns the members of `object` whose keys name one of `fields`, exactly or case-insensitively,
 * under the field's own name. As in Go, members are taken in document order, so of two keys
 * naming one field the later wins. Keys that name no field are left out.
 */
export function pickFields(
  object: Readonly<Record<string, unknown>>,
  fields: readonly string[],
): { readonly picked: Record<string, unknown>; readonly folded: readonly FoldedKey[] } {
  const picked: Record<string, unknown> = {};
  const folded: FoldedKey[] = [];
  for (const [key, value] of Object.entries(object)) {
    const field = fields.includes(key) ? key : fields.find((f) => foldEquals(key, f));
    if (field === undefined) continue;
    if (field !== key) folded.push({ key, field });
    picked[field] = value;
  }
  return { picked, folded };
}

/** The fields of an object, each either a leaf or an object with fields of its own. */
export interface FieldTree {
  readonly [field: string]: FieldTree | null;
}

/**
 * Reads `value`'s known fields as Go's decoder does (see pickFields), down the tree, and reports
 * each key that was read under another spelling with its path. A value that is not an object is
 * returned as it is.
 */
export function pickFieldTree(
  value: unknown,
  tree: FieldTree,
  path: readonly string[] = [],
): { readonly value: unknown; readonly folded: readonly { path: string[]; field: string }[] } {
  if (!isJsonObject(value)) return { value, folded: [] };
  const { picked, folded } = pickFields(value, Object.keys(tree));
  const found = folded.map(({ key, field }) => ({ path: [...path, key], field }));
  for (const [field, subtree] of Object.entries(tree)) {
    if (subtree === null || !Object.hasOwn(picked, field)) continue;
    const inner = pickFieldTree(picked[field], subtree, [...path, field]);
    picked[field] = inner.value;
    found.push(...inner.folded);
  }
  return { value: picked, folded: found };
}
