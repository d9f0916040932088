/**
 * The ClusterTrustBundle version a cluster serves (./api-discovery.ts reads it), remembered per
 * cluster client and found again when a call there meets a 404 for the resource (an API server
 * upgrade took the version away) or when the answer is old.
 */
import type { ClusterAccess } from './cluster-access.js';
import { isResourceNotServed } from './kube-errors.js';
import { discoverApi, discoveryGet, type DiscoveryGet } from './api-discovery.js';
import { TRUST_BUNDLE_API, type ServedTrustBundleApi, type TrustBundleApi } from './trust-bundle-api.js';

/** The cluster serves no ClusterTrustBundle version we speak; `found` says what discovery found. */
export class TrustBundleApiNotServedError extends Error {
  override readonly name = 'TrustBundleApiNotServedError';

  constructor(readonly found: string) {
    super(`the cluster serves no ClusterTrustBundle API (certificates.k8s.io v1 or v1beta1): ${found}`);
  }
}

/** How long answers are trusted. */
export interface TrustBundleApisOptions {
  /** A served version is asked again after this long (default 1 h); a 404 asks at once. */
  readonly servedMaxAgeMs?: number;
  /** "None served" is asked again after this long (default 5 min): the API may be turned on. */
  readonly unservedMaxAgeMs?: number;
  readonly now?: () => number;
}

interface Entry {
  readonly api: Promise<TrustBundleApi>;
  /** Set once the answer came: until when it holds. */
  expiresAt: number;
}

/**
 * The answer per cluster client (a WeakMap: a client dropped takes its answer with it). Callers
 * asking at once share one discovery; a failed discovery is not remembered.
 */
export class TrustBundleApis {
  private readonly entries = new WeakMap<ClusterAccess, Entry>();
  private readonly now: () => number;

  constructor(private readonly o: TrustBundleApisOptions = {}) {
    this.now = o.now ?? Date.now;
  }

  /**
   * The cluster's API, discovered through `get` (default: plain GETs through `access`) when not
   * known. A `hint` (the version this cluster was last written at, from a record kept elsewhere)
   * stands in for discovery while nothing is known: a call there that meets a 404 for the
   * resource discovers anyway ({@link atServed}).
   */
  get(
    access: ClusterAccess,
    get: DiscoveryGet = discoveryGet(access),
    hint?: ServedTrustBundleApi,
  ): Promise<TrustBundleApi> {
    const known = this.entries.get(access);
    if (known !== undefined && this.now() < known.expiresAt) return known.api;
    const entry: Entry = {
      api:
        hint !== undefined && known === undefined
          ? Promise.resolve(hint)
          : discoverApi(TRUST_BUNDLE_API, get),
      expiresAt: Infinity,
    };
    this.entries.set(access, entry);
    entry.api.then(
      (api) => {
        const age = api.served
          ? (this.o.servedMaxAgeMs ?? 60 * 60_000)
          : (this.o.unservedMaxAgeMs ?? 5 * 60_000);
        entry.expiresAt = this.now() + age;
      },
      () => {
        if (this.entries.get(access) === entry) this.entries.delete(access);
      },
    );
    return entry.api;
  }

  /** Discovers again now (a periodic probe), and remembers that answer. */
  refresh(access: ClusterAccess, get: DiscoveryGet = discoveryGet(access)): Promise<TrustBundleApi> {
    this.forget(access);
    return this.get(access, get);
  }

  /** Forgets the answer (a call met a 404 for the resource): the next call discovers again. */
  forget(access: ClusterAccess): void {
    this.entries.delete(access);
  }

  /**
   * Runs `call` at the served version; when the cluster answers it with a 404 for the resource, the
   * version is discovered again and `call` runs once more. Rejects with
   * {@link TrustBundleApiNotServedError} when no version is served.
   */
  async atServed<T>(
    access: ClusterAccess,
    call: (api: ServedTrustBundleApi) => Promise<T>,
    get: DiscoveryGet = discoveryGet(access),
  ): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const api = await this.get(access, get);
      if (!api.served) throw new TrustBundleApiNotServedError(api.found);
      try {
        return await call(api);
      } catch (error) {
        if (attempt > 0 || !isResourceNotServed(error)) throw error;
        this.forget(access);
      }
    }
  }
}

/** The process's answers, shared by every part that reaches the same client. */
export const trustBundleApis = new TrustBundleApis();
