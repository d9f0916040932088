/**
 * A registry's `WWW-Authenticate` answer to an anonymous or rejected request (RFC 7235, and the
 * token flow of the distribution spec that Docker Hub, ghcr.io and Harbor use).
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

const PARAM = /([A-Za-z][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s"]*))/g;

function params(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of text.matchAll(PARAM)) {
    const key = m[1]?.toLowerCase();
    const value = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? '');
    if (key !== undefined && !out.has(key)) out.set(key, value);
  }
  return out;
}

/**
 * Reads the challenge of a `WWW-Authenticate` header (several challenges, joined by commas as
 * Node joins repeated headers, are allowed): Bearer with a realm wins over Basic, since a
 * registry that offers both takes tokens on every path. Undefined when neither is offered.
 */
export function parseAuthChallenge(
  header: string | readonly string[] | undefined,
): AuthChallenge | undefined {
  if (header === undefined) return undefined;
  const text = typeof header === 'string' ? header : header.join(', ');
  const bearer = /\bBearer\s+/i.exec(text);
  if (bearer) {
    // The parameters run to the next scheme name (a token followed by a space, not by `=`).
    const rest = text.slice(bearer.index + bearer[0].length);
    const next = /,\s*[A-Za-z][\w-]*\s+(?=[^\s=])/.exec(rest);
    const p = params(next ? rest.slice(0, next.index) : rest);
    const realm = p.get('realm');
    if (realm !== undefined && realm !== '')
      return { scheme: 'bearer', realm, service: p.get('service'), scope: p.get('scope') };
  }
  return /(?:^|[\s,])Basic(?:\s|$)/i.test(text) ? { scheme: 'basic' } : undefined;
}
