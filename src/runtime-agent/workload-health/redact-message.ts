/**
 * The kubelet's messages about a failed pull or start quote registry URLs and, with some
 * runtimes, the credentials they tried: a message goes into a ConfigMap the KCP copies into
 * statuses, so everything that looks like a credential is masked before it is kept.
 *
 * A Pod's creator picks the image a pull message quotes, so the text is a tenant's (DESIGN §14):
 * it is cut to a bound before any rule reads it, and each rule reads it in one pass (the header
 * form a regex that cannot backtrack, the other two small scanners).
 */

/** Longest message kept (the report's limit). */
export const MAX_MESSAGE_LENGTH = 512;

/**
 * How much of a message the rules read, in multiples of the length kept: masking shortens
 * secrets, so somewhat more than is kept is read, never all a tenant can make a kubelet say.
 */
export const SCAN_FACTOR = 4;

const MASK = '***';

/** Characters no credential of any rule contains: a cut falls back to the last of them. */
const SECRET_END = /[\s"']/;
// `Authorization: Basic dXNlcjpwYXNz`, `Bearer eyJ…` (linear: one literal, then one class run).
const HEADER = /\b(Basic|Bearer)\s+[A-Za-z0-9+/=._~-]+/gi;
const SCHEME_CHAR = /[a-z0-9+.-]/i;
const LETTER = /[a-z]/i;
const USER_INFO_END = /[\s/@'"]/;
/** A maximal run of the characters a key is made of. */
const KEY_RUN = /[a-z_-]+/gi;
const SECRET_KEY = /auth|passw(?:or)?d|pwd|token|secret|api[_-]?key|credential/i;
const SPACE = /\s/;
const VALUE_END = /[\s"',;&{}[\]]/;

/**
 * The first `limit` characters of `message`, cut back to the end of a word when it was longer:
 * a secret cut in half could not be recognised as one, so its head must not stay.
 */
function scanned(message: string, limit: number): { text: string; cut: boolean } {
  if (message.length <= limit) return { text: message, cut: false };
  let end = limit;
  while (end > 0 && !SECRET_END.test(message[end - 1] ?? '')) end--;
  return { text: message.slice(0, end), cut: true };
}

/**
 * `scheme://user:pass@host` → `scheme://***@host`; only with a scheme (`name:tag@sha256:…` is an
 * image). The scheme is the run of scheme characters before `://` and holds a letter.
 */
function maskUserInfo(text: string): string {
  let out = '';
  let copied = 0;
  for (let at = text.indexOf('://'); at !== -1; at = text.indexOf('://', at + 1)) {
    let start = at;
    let letter = false;
    while (start > copied && SCHEME_CHAR.test(text[start - 1] ?? '')) {
      start--;
      if (LETTER.test(text[start] ?? '')) letter = true;
    }
    const user = at + 3;
    let end = user;
    while (end < text.length && !USER_INFO_END.test(text[end] ?? '')) end++;
    if (!letter || end === user || text[end] !== '@') continue;
    out += `${text.slice(copied, user)}${MASK}`;
    copied = end;
    at = end;
  }
  return out + text.slice(copied);
}

/**
 * `auth=…`, `password: …`, `"auth":"…"`, `token=…`, `client_secret=…`, `api-key=…`: a value after
 * a key whose name holds one of the words, unless it is masked already.
 */
function maskKeyValues(text: string): string {
  let out = '';
  let copied = 0;
  KEY_RUN.lastIndex = 0;
  for (let m = KEY_RUN.exec(text); m !== null; m = KEY_RUN.exec(text)) {
    if (!SECRET_KEY.test(m[0])) continue;
    // `"?\s*[=:]\s*"?` after the key
    let i = m.index + m[0].length;
    if (text[i] === '"') i++;
    while (i < text.length && SPACE.test(text[i] ?? '')) i++;
    if (text[i] !== '=' && text[i] !== ':') continue;
    i++;
    while (i < text.length && SPACE.test(text[i] ?? '')) i++;
    if (text[i] === '"') i++;
    // Masked already: skipped before its value is scanned, else `token=***` repeated would scan
    // to the end of the text once per key (the keys after it are still read).
    if (text.startsWith(MASK, i)) continue;
    let end = i;
    while (end < text.length && !VALUE_END.test(text[end] ?? '')) end++;
    if (end === i) continue;
    out += `${text.slice(copied, i)}${MASK}`;
    copied = end;
    KEY_RUN.lastIndex = end;
  }
  return out + text.slice(copied);
}

/**
 * `message` with credentials masked (URL user info, Basic/Bearer tokens, `key=value` pairs whose
 * key names a secret), cut to `max` characters after masking so no cut leaves a secret's head.
 * At most `max * SCAN_FACTOR` characters of it are read.
 */
export function redactMessage(message: string, max = MAX_MESSAGE_LENGTH): string {
  const { text, cut } = scanned(message, max * SCAN_FACTOR);
  // Order matters: the header forms first, so the key form never leaves a token's tail.
  const masked = maskKeyValues(maskUserInfo(text.replace(HEADER, `$1 ${MASK}`)));
  return masked.length > max || cut ? `${masked.slice(0, max - 1)}…` : masked;
}
