/**
 * A {@link ListerWatcher} of ClusterTrustBundles at whatever version the cluster serves
 * (./trust-bundle-discovery.ts), for the reflectors that follow one bundle (the KCP's source, the
 * webhook's bundle in force).
 *
 * - A list discovers the version (remembered per client) and lists there; a 404 for the resource
 *   (an upgrade took the version away) forgets it, so the reflector's retry discovers again.
 * - A watch runs at the version its list used; when discovery now names another one, it ends as
 *   expired (410), so the reflector lists again at the new one.
 * - A cluster that serves none lists as empty (the bundle is missing, which its followers
 *   report) and its watch waits, then asks discovery again: the API may be turned on.
 */
import type { ClusterAccess } from './cluster-access.js';
import { KubeApiError, isResourceNotServed } from './kube-errors.js';
import { KubeListWatch } from './list-watch.js';
import type {
  ListOptions,
  ListResult,
  ListerWatcher,
  WatchEventCallback,
  WatchOptions,
} from './lister-watcher.js';
import type { TrustBundleApi } from './trust-bundle-api.js';
import { trustBundleApis, type TrustBundleApis } from './trust-bundle-discovery.js';
import { abortableSleep } from './abortable-sleep.js';

/** The resourceVersion of the empty list of a cluster that serves no version. */
const UNSERVED_RESOURCE_VERSION = '0';

/** Options of a {@link TrustBundleListWatch}. */
export interface TrustBundleListWatchOptions {
  /** Where versions are remembered (default: the process's). */
  readonly apis?: TrustBundleApis;
  /** While none is served, discovery is asked again this often at most (default 60 s). */
  readonly unservedRecheckMs?: number;
  /** Told the version each list used (or that none is served). */
  readonly onApi?: (api: TrustBundleApi) => void;
}

/** Lists and watches ClusterTrustBundles at the served version; see the file comment. */
export class TrustBundleListWatch<T> implements ListerWatcher<T> {
  private readonly apis: TrustBundleApis;
  /** The apiVersion the last list used (`''`: none served). */
  private listed: string | undefined;
  private readonly byPath = new Map<string, KubeListWatch<T>>();

  constructor(
    private readonly access: ClusterAccess,
    private readonly o: TrustBundleListWatchOptions = {},
  ) {
    this.apis = o.apis ?? trustBundleApis;
  }

  async list(opts: ListOptions, signal: AbortSignal): Promise<ListResult<T>> {
    const api = await this.apis.get(this.access);
    this.o.onApi?.(api);
    if (!api.served) {
      this.listed = '';
      return { items: [], resourceVersion: UNSERVED_RESOURCE_VERSION };
    }
    try {
      const result = await this.at(api.path).list(opts, signal);
      this.listed = api.apiVersion;
      return result;
    } catch (error) {
      if (isResourceNotServed(error)) this.apis.forget(this.access);
      throw error;
    }
  }

  async watch(opts: WatchOptions, onEvent: WatchEventCallback<T>, signal: AbortSignal): Promise<void> {
    const api = await this.apis.get(this.access);
    const current = api.served ? api.apiVersion : '';
    if (current !== this.listed) throw relistAt(current);
    if (!api.served) {
      await abortableSleep(Math.min(opts.timeoutSeconds * 1000, this.o.unservedRecheckMs ?? 60_000), signal);
      if (signal.aborted) return;
      // Asked again: a version turned on is listed at once.
      const again = await this.apis.refresh(this.access);
      if (again.served) throw relistAt(again.apiVersion);
      return;
    }
    try {
      await this.at(api.path).watch(opts, onEvent, signal);
    } catch (error) {
      if (isResourceNotServed(error)) this.apis.forget(this.access);
      throw error;
    }
  }

  private at(path: string): KubeListWatch<T> {
    let lw = this.byPath.get(path);
    if (lw === undefined) {
      lw = new KubeListWatch<T>(this.access, path);
      this.byPath.set(path, lw);
    }
    return lw;
  }
}

/** A 410: the reflector lists again (at the version now served). */
function relistAt(apiVersion: string): KubeApiError {
  const at = apiVersion === '' ? 'none served' : apiVersion;
  return new KubeApiError(`the ClusterTrustBundle API changed (now ${at}); listing again`, {
    statusCode: 410,
    reason: 'Expired',
  });
}
