/**
 * What a reflector is configured with: the resource, its selectors, the timing of lists and
 * watches, and the handlers its changes are delivered to. Its own module so the settings read
 * apart from the list+watch loop in reflector.ts.
 */
import type { BackoffOptions } from './backoff.js';
import type { ListerWatcher } from './lister-watcher.js';
import type { KubeLogger } from './safe-logger.js';

/** Callbacks for changes of the cache; they run after the store already holds the change. */
export interface ResourceEventHandlers<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  /** `finalStateUnknown`: the deletion was inferred by a relist; `obj` is the last state seen. */
  onDelete?(obj: T, finalStateUnknown: boolean): void;
}

/** Minimal structured logger (pino's `Logger` fits). */
export type ReflectorLogger = KubeLogger;

/** Options of a `Reflector` (reflector.ts). */
export interface ReflectorOptions<T> {
  /** For logs, e.g. the resource path. */
  readonly name: string;
  readonly listerWatcher: ListerWatcher<T>;
  readonly handlers?: ResourceEventHandlers<T>;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Items of one list page at most; 0 lists in one request (default 500, as client-go's pager). */
  readonly pageSize?: number;
  /**
   * Bytes of one list page's answer at most (default 2 MiB): pages are sized by bytes, not items
   * (./list-budget.ts); an answer beyond is dropped as it arrives and asked again in half.
   */
  readonly pageBytes?: number;
  /** The largest one object can be (default etcd's 1.5 MiB): the first page holds `pageBytes` of those. */
  readonly itemBytes?: number;
  /** Server-side watch timeout, drawn uniformly per watch (default 300–600 s). */
  readonly watchTimeoutSeconds?: { readonly min: number; readonly max: number };
  /** Restart a watch that delivered nothing, not even a bookmark, for this long; 0 disables (default 180 s). */
  readonly inactivityTimeoutMs?: number;
  /** Backoff between failed attempts (default client-go's: 800 ms … 30 s, factor 2, jitter 1). */
  readonly backoff?: BackoffOptions;
  /** A watch that delivered an event or lasted this long counts as healthy and resets the backoff (default 1 s). */
  readonly minHealthyWatchMs?: number;
  readonly random?: () => number;
  readonly logger?: ReflectorLogger;
  /**
   * Applied to every listed or watched object before it is cached (client-go's SetTransform),
   * e.g. {@link stripManagedFields}: what a cache of thousands of objects need not hold. A list
   * applies it page by page, so a list holds no more of the objects than this keeps.
   */
  readonly transform?: (obj: T) => T;
}

/**
 * A transform dropping `metadata.managedFields` (client-go's TransformStripManagedFields): a
 * controller reading its cache never needs them, and they are a good part of every object.
 */
export function stripManagedFields<T extends { metadata?: object }>(obj: T): T {
  const meta = obj.metadata as { managedFields?: unknown } | undefined;
  if (meta?.managedFields !== undefined) delete meta.managedFields;
  return obj;
}
