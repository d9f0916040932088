/**
 * Bounds on what one log line may carry. Log fields often come from requests (a namespace, a
 * Pod name, a decode error quoting the body), and a client controls their length: one request
 * with a namespace of megabytes would write lines of megabytes (docs/webhook-hardening.md).
 * Every string is cut to a few hundred characters, and collections to their first members,
 * before a line is written.
 */
export interface TruncationLimits {
  /** Characters kept of a string (default 300). */
  readonly maxString: number;
  /** Members kept of an array (default 20). */
  readonly maxItems: number;
  /** Keys kept of an object (default 50). */
  readonly maxKeys: number;
  /** Nesting followed (default 6); deeper values are replaced by a marker. */
  readonly maxDepth: number;
}

/** The limits the process logger applies. */
export const LOG_LIMITS: TruncationLimits = { maxString: 300, maxItems: 20, maxKeys: 50, maxDepth: 6 };

/** `s` cut to `max` characters, saying how much was cut; `s` itself when short enough. */
export function truncateString(s: string, max: number = LOG_LIMITS.maxString): string {
  return s.length <= max ? s : `${s.slice(0, max)}…[${s.length - max} more characters]`;
}

function isPlainObject(v: object): v is Record<string, unknown> {
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * `value` with every string, array and plain object within the limits. Returns the input itself
 * when nothing exceeds them (the common case costs a walk, no copy). Errors and other class
 * instances are left alone (the logger's serializers handle errors); byte buffers become a
 * marker with their size.
 */
export function truncateValue(value: unknown, limits: TruncationLimits = LOG_LIMITS, depth = 0): unknown {
  if (typeof value === 'string') return truncateString(value, limits.maxString);
  if (typeof value !== 'object' || value === null) return value;
  if (ArrayBuffer.isView(value)) return `[${value.constructor.name} of ${value.byteLength} bytes]`;
  if (Array.isArray(value)) {
    if (depth >= limits.maxDepth) return `[array of ${value.length}]`;
    const kept = value.length > limits.maxItems ? value.slice(0, limits.maxItems) : value;
    let changed = kept !== value;
    const out = kept.map((item: unknown) => {
      const t = truncateValue(item, limits, depth + 1);
      if (t !== item) changed = true;
      return t;
    });
    if (value.length > limits.maxItems) out.push(`…[${value.length - limits.maxItems} more items]`);
    return changed ? out : value;
  }
  if (!isPlainObject(value)) return value;
  if (depth >= limits.maxDepth) return '[object]';
  let changed = false;
  let keys = 0;
  let dropped = 0;
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    if (keys >= limits.maxKeys) {
      dropped++;
      continue;
    }
    keys++;
    const member = value[key];
    const k = truncateString(key, limits.maxString);
    const t = truncateValue(member, limits, depth + 1);
    if (t !== member || k !== key) changed = true;
    // "__proto__" as a plain assignment would set the prototype, not a member.
    Object.defineProperty(out, k, { value: t, enumerable: true, writable: true, configurable: true });
  }
  if (dropped > 0) {
    out['…'] = `${dropped} more keys`;
    changed = true;
  }
  return changed ? out : value;
}

/** The fields of one log line within the limits (the same object when nothing exceeds them). */
export function truncateFields<T extends object>(fields: T, limits: TruncationLimits = LOG_LIMITS): T {
  return truncateValue(fields, limits) as T;
}
