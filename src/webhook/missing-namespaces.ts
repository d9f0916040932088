/** Settings of {@link MissingNamespaces}. */
export interface MissingNamespacesOptions {
  /** How long a miss is believed (default 5 s: a namespace is rarely created right after one was asked for). */
  readonly ttlMs?: number;
  /** Misses kept at most (default 1024; the oldest go first). */
  readonly maxEntries?: number;
  /** Milliseconds of a monotonic clock (tests pass a fake). */
  readonly now?: () => number;
}

/** The longest namespace name the API server accepts (a DNS-1123 label). */
const MAX_NAME_LENGTH = 63;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Whether `name` can name a namespace at all (a DNS-1123 label); one that cannot never exists. */
export function isNamespaceName(name: string): boolean {
  return name.length <= MAX_NAME_LENGTH && DNS_LABEL.test(name);
}

/**
 * A short memory of namespaces the API server said do not exist (a negative cache), so a flood
 * of requests naming one costs one GET, not a GET and a Secret POST each. Only valid names are
 * kept (others are known missing without asking), so an entry is at most 63 characters and the
 * whole at most `maxEntries` of them. The namespace cache is consulted first: a namespace that
 * appears there is found whatever this remembers.
 */
export class MissingNamespaces {
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  /** Name → when the miss expires, oldest first. */
  private readonly expiry = new Map<string, number>();

  constructor(o: MissingNamespacesOptions = {}) {
    this.ttlMs = o.ttlMs ?? 5_000;
    this.maxEntries = o.maxEntries ?? 1024;
    this.now = o.now ?? (() => performance.now());
  }

  /** How many misses are remembered now (expired ones included until looked up or evicted). */
  get size(): number {
    return this.expiry.size;
  }

  /** Remembers that `name` does not exist. */
  remember(name: string): void {
    if (!isNamespaceName(name)) return;
    this.expiry.delete(name);
    this.expiry.set(name, this.now() + this.ttlMs);
    if (this.expiry.size > this.maxEntries) {
      const oldest = this.expiry.keys().next();
      if (!oldest.done) this.expiry.delete(oldest.value);
    }
  }

  /** Whether `name` is known not to exist: not a namespace name, or a miss remembered and not expired. */
  has(name: string): boolean {
    if (!isNamespaceName(name)) return true;
    const until = this.expiry.get(name);
    if (until === undefined) return false;
    if (this.now() < until) return true;
    this.expiry.delete(name);
    return false;
  }
}
