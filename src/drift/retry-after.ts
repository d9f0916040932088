/**
 * Reads an HTTP `Retry-After` header (RFC 9110 §10.2.3: delay-seconds or an HTTP-date) as a
 * delay in ms, capped at `capMs` so a peer cannot park the sender for hours. Undefined when
 * absent or unreadable, so the caller falls back to its own backoff.
 */
export function parseRetryAfter(
  value: string | string[] | undefined,
  capMs: number,
  now: number = Date.now(),
): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (raw === undefined || raw === '') return undefined;
  let ms: number;
  if (/^\d+$/.test(raw)) {
    ms = Number(raw) * 1000;
  } else if (/^[A-Za-z]{3,9},? /.test(raw)) {
    // Every HTTP-date form starts with the day name; Date.parse alone takes "-1" for a year.
    const at = Date.parse(raw);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  } else {
    return undefined;
  }
  return Math.min(capMs, Math.max(0, ms));
}
