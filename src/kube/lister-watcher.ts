/**
 * The seam between the reflector and the API server: a `ListerWatcher` lists a
 * resource (paged) and streams watch events. `list-watch.ts` implements it over
 * HTTP; tests script it in memory.
 */
import type { KubeStatus } from './kube-errors.js';

/** Query of one list page. */
export interface ListOptions {
  readonly limit?: number;
  readonly continue?: string;
  readonly resourceVersion?: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /**
   * The most bytes of the answer taken; beyond, the list fails with `AnswerTooLargeError` as the
   * bytes arrive (./list-budget.ts). Undefined: only the access's own cap applies.
   */
  readonly maxBytes?: number;
}

/** One list page: `continue` is set while more pages follow. */
export interface ListResult<T> {
  readonly items: T[];
  readonly resourceVersion: string;
  readonly continue?: string;
  /** The answer's size in bytes, where the lister measured it (what the next page's size is chosen by). */
  readonly bytes?: number;
}

/** Query of one watch request. */
export interface WatchOptions {
  readonly resourceVersion: string;
  /** Server-side timeout: the server ends the watch after this many seconds. */
  readonly timeoutSeconds: number;
  readonly allowWatchBookmarks: true;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
}

/** Watch event types of the Kubernetes API. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** Receives watch events; the object is a `Status` for `ERROR`. */
export type WatchEventCallback<T> = (type: WatchEventType, obj: T | KubeStatus) => void;

/** Lists and watches one resource collection. */
export interface ListerWatcher<T> {
  /** One list page; rejects with a `KubeApiError` (410 when a continue token expired). */
  list(opts: ListOptions, signal: AbortSignal): Promise<ListResult<T>>;
  /**
   * Streams events until the server ends the watch (resolves), the signal aborts
   * (resolves or rejects, either is fine), or the request fails (rejects, e.g. with a
   * 410 `KubeApiError`). Must stop delivering events once the signal is aborted.
   */
  watch(opts: WatchOptions, onEvent: WatchEventCallback<T>, signal: AbortSignal): Promise<void>;
}
