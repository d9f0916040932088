/**
 * Which upstream hosts have a customer's registry cache on the runtime, from its
 * RegistryCacheConfig objects (pure; ../../api/registry-caches.ts). The objects are a runtime
 * user's to write (DESIGN §14): each string is cut before it is looked at, the host is checked
 * with the image reference's own (linear) pattern, and the hosts kept are bounded in number.
 */
import {
  CACHE_API_NOT_SERVED,
  MAX_HOST_CHARS,
  MAX_REPORTED_HOSTS,
  type RegistryCacheMode,
  type RegistryCachesReport,
} from '../../api/registry-caches.js';
import { canonicalRegistry, isValidRegistryHost } from '../../image/image-reference.js';
import { isJsonObject } from '../../api/json-object.js';

/**
 * The most distinct hosts one look keeps (admission asks them; a real runtime has a handful);
 * hosts beyond are counted, not kept, and so never left to their cache.
 */
export const MAX_TRACKED_HOSTS = 1000;

/** What KIM's controller sets once it configured the cache (kyma-project/registry-cache's `ReadyState`). */
export const READY_STATE = 'Ready';

/**
 * The canonical host an object's cache serves, or undefined where it serves none yet: its state is
 * not `Ready` (KIM has not configured the nodes, so pulls of the host still go to the host), it is
 * being deleted, or its `spec.upstream` is no registry host (over {@link MAX_HOST_CHARS}: not read).
 */
export function cachedHostOf(item: unknown): string | undefined {
  if (!isJsonObject(item)) return undefined;
  const metadata = item.metadata;
  if (
    isJsonObject(metadata) &&
    metadata.deletionTimestamp !== undefined &&
    metadata.deletionTimestamp !== null
  )
    return undefined;
  const status = item.status;
  if (!isJsonObject(status) || status.state !== READY_STATE) return undefined;
  const spec = item.spec;
  const upstream = isJsonObject(spec) ? spec.upstream : undefined;
  if (typeof upstream !== 'string' || upstream.length > MAX_HOST_CHARS) return undefined;
  return isValidRegistryHost(upstream) ? canonicalRegistry(upstream) : undefined;
}

/** The hosts of one look, as they arrive page by page. */
export class CachedHostTally {
  private readonly hosts = new Set<string>();
  private extra = new Set<string>();
  private overflow = 0;

  /** Starts over (the list restarted). */
  reset(): void {
    this.hosts.clear();
    this.extra = new Set();
    this.overflow = 0;
  }

  /** Counts one object. */
  add(item: unknown): void {
    const host = cachedHostOf(item);
    if (host === undefined || this.hosts.has(host)) return;
    if (this.hosts.size < MAX_TRACKED_HOSTS) this.hosts.add(host);
    // Beyond the bound: counted once each while that stays small, then only counted.
    else if (this.extra.size < MAX_TRACKED_HOSTS) this.extra.add(host);
    else this.overflow++;
  }

  /** The hosts kept, and how many more there were (at least). */
  result(): CachedHosts {
    return { hosts: new Set(this.hosts), more: this.extra.size + this.overflow };
  }
}

/** The outcome of one look. */
export interface CachedHosts {
  /** Canonical registry hosts with a ready cache (at most {@link MAX_TRACKED_HOSTS}). */
  readonly hosts: ReadonlySet<string>;
  /** Hosts with a cache beyond those kept. */
  readonly more: number;
}

/** No caches: where the API is not served. */
export const NO_CACHED_HOSTS: CachedHosts = { hosts: new Set(), more: 0 };

/** What the report says (pure): the hosts, those the overrides in force rewrite, and the mode. */
export function cachesReportOf(o: {
  /** The API version read, or undefined where none is served. */
  readonly api: string | undefined;
  readonly found: CachedHosts;
  /** Of the hosts, those the overrides in force rewrite (../../image/cached-registries.ts). */
  readonly rewritten: readonly string[];
  readonly mode: RegistryCacheMode;
  readonly at: Date;
}): RegistryCachesReport {
  const sorted = [...o.found.hosts].sort();
  const listed = sorted.slice(0, MAX_REPORTED_HOSTS);
  return {
    api: o.api ?? CACHE_API_NOT_SERVED,
    hosts: listed,
    more: sorted.length - listed.length + o.found.more,
    rewritten: o.rewritten.slice(0, MAX_REPORTED_HOSTS),
    mode: o.mode,
    at: o.at.toISOString(),
  };
}
