/**
 * The kubelet's messages about a failed pull or start quote registry URLs and, with some
 * runtimes, the credentials they tried: a message goes into a ConfigMap the KCP copies into
 * statuses, so everything that looks like a credential is masked before it is kept.
 */

/** Longest message kept (the report's limit). */
export const MAX_MESSAGE_LENGTH = 512;

const MASK = '***';

// Order matters: the header forms first, so the key form below never leaves a token's tail.
const RULES: readonly (readonly [RegExp, string])[] = [
  // `Authorization: Basic dXNlcjpwYXNz`, `Bearer eyJ…`
  [/\b(Basic|Bearer)\s+[A-Za-z0-9+/=._~-]+/gi, `$1 ${MASK}`],
  // `https://user:pass@registry/…` (only with a scheme: `name:tag@sha256:…` is an image)
  [/([a-z][a-z0-9+.-]*:\/\/)[^\s/@'"]+@/gi, `$1${MASK}@`],
  // `auth=…`, `password: …`, `"auth":"…"`, `token=…`, `client_secret=…`, `api-key=…`
  [
    /\b([a-z_-]*(?:auth|passw(?:or)?d|pwd|token|secret|api[_-]?key|credentials?)[a-z_-]*)("?\s*[=:]\s*"?)(?!\*\*\*)[^\s"',;&{}[\]]+/gi,
    `$1$2${MASK}`,
  ],
];

/**
 * `message` with credentials masked (URL user info, Basic/Bearer tokens, `key=value` pairs whose
 * key names a secret), cut to `max` characters after masking so no cut leaves a secret's head.
 */
export function redactMessage(message: string, max = MAX_MESSAGE_LENGTH): string {
  let text = message;
  for (const [pattern, replacement] of RULES) text = text.replace(pattern, replacement);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
