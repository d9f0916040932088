/**
 * JSON merge patches (RFC 7386) that replace an object's fields whole: a field left out of a merge
 * patch is kept by the server, so one that must go has to be sent as null.
 */

/**
 * `next` with null for every top-level field of `prev` it lacks or holds as undefined (JSON drops an
 * undefined field, which the server would keep): applied, the result is `next`'s fields.
 */
export function replacingPatch(prev: object | undefined, next: object): Record<string, unknown> {
  const out: Record<string, unknown> = { ...next };
  for (const k of Object.keys(prev ?? {})) if (out[k] === undefined) out[k] = null;
  return out;
}
