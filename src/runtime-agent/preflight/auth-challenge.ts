/**
 * A registry's `WWW-Authenticate` answer to an anonymous or rejected request (RFC 7235, and the
 * token flow of the distribution spec that Docker Hub, ghcr.io and Harbor use).
 *
 * Whoever runs the registry writes this header, so it is read with a bound and in one pass
 * (DESIGN §14): a tokenizer that looks at each character once, no regex that could backtrack.
 */

/** What a 401 asks for. */
export type AuthChallenge =
  | { readonly scheme: 'basic' }
  | {
      readonly scheme: 'bearer';
      /** The token endpoint (an absolute URL). */
      readonly realm: string;
      readonly service?: string | undefined;
      readonly scope?: string | undefined;
    };

/**
 * Longest header read (all challenges joined). Docker Hub's is about 150 characters, a scope
 * names one repository (255 at most); a longer header is not a usable challenge.
 */
export const MAX_CHALLENGE_LENGTH = 4096;

/** One challenge: its scheme (lower case) and its parameters (names lower case, first wins). */
interface Challenge {
  readonly scheme: string;
  readonly params: Map<string, string>;
}

const WHITESPACE = /\s/;
const isSpace = (c: string | undefined): boolean => c !== undefined && WHITESPACE.test(c);
/** Ends a scheme or parameter name. */
const isNameEnd = (c: string | undefined): boolean =>
  c === undefined || c === ',' || c === '=' || c === '"' || isSpace(c);
/** Ends an unquoted parameter value. */
const isValueEnd = (c: string | undefined): boolean =>
  c === undefined || c === ',' || c === '"' || isSpace(c);

/** A quoted string at `open` (its `"`): the value with escapes undone, and the index after it. */
function quoted(text: string, open: number): { value: string; end: number } | undefined {
  let value = '';
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i];
    if (c === '"') return { value, end: i + 1 };
    if (c === '\\' && i + 1 < text.length) i++;
    value += text[i] ?? '';
  }
  return undefined; // not closed
}

/**
 * The challenges of `text`, left to right: a name followed by `=` is a parameter of the current
 * challenge, any other name starts a challenge (RFC 7235's `auth-scheme [ 1*SP #auth-param ]`).
 */
function challenges(text: string): Challenge[] {
  const out: Challenge[] = [];
  let current: Challenge | undefined;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === ',' || isSpace(c)) {
      i++;
      continue;
    }
    if (c === '"') {
      // A stray quoted string: skipped whole, so nothing inside it reads as a name.
      i = quoted(text, i)?.end ?? text.length;
      continue;
    }
    let end = i;
    while (!isNameEnd(text[end])) end++;
    if (end === i) {
      i++; // a stray `=`
      continue;
    }
    const name = text.slice(i, end).toLowerCase();
    let next = end;
    while (isSpace(text[next])) next++;
    if (text[next] !== '=') {
      current = { scheme: name, params: new Map() };
      out.push(current);
      i = next;
      continue;
    }
    let start = next + 1;
    while (isSpace(text[start])) start++;
    let value: string;
    if (text[start] === '"') {
      const q = quoted(text, start);
      // An unclosed quote leaves the value empty and ends the header.
      value = q?.value ?? '';
      i = q?.end ?? text.length;
    } else {
      let stop = start;
      while (!isValueEnd(text[stop])) stop++;
      value = text.slice(start, stop);
      i = stop;
    }
    if (current !== undefined && !current.params.has(name)) current.params.set(name, value);
  }
  return out;
}

/**
 * Reads the challenge of a `WWW-Authenticate` header (several challenges, joined by commas as
 * Node joins repeated headers, are allowed): Bearer with a realm wins over Basic, since a
 * registry that offers both takes tokens on every path. Undefined when neither is offered, or
 * when the header is longer than {@link MAX_CHALLENGE_LENGTH}.
 */
export function parseAuthChallenge(
  header: string | readonly string[] | undefined,
): AuthChallenge | undefined {
  if (header === undefined) return undefined;
  const parts = typeof header === 'string' ? [header] : header;
  // Bounded before it is joined or read: a cut realm would be a wrong URL, so too long is unusable.
  let length = 0;
  for (const part of parts) length += part.length + 2;
  if (length > MAX_CHALLENGE_LENGTH + 2) return undefined;
  const all = challenges(parts.join(', '));
  for (const c of all) {
    const realm = c.params.get('realm');
    if (c.scheme === 'bearer' && realm !== undefined && realm !== '')
      return { scheme: 'bearer', realm, service: c.params.get('service'), scope: c.params.get('scope') };
  }
  return all.some((c) => c.scheme === 'basic') ? { scheme: 'basic' } : undefined;
}
