/**
 * A collection that may not exist (its CRD is not installed): listed as empty rather than failing,
 * so a reflector over it syncs, and looked for again now and then, so a CRD installed later is
 * followed from then on.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { KubeApiError, statusCodeOf } from './kube-errors.js';
import type {
  ListOptions,
  ListResult,
  ListerWatcher,
  WatchEventCallback,
  WatchOptions,
} from './lister-watcher.js';

/** The resourceVersion of the empty list that stands for a missing collection. */
const ABSENT = 'absent';

/**
 * Wraps `inner` so that a 404 on list (no such resource: the CRD is not installed) reads as an
 * empty collection. Watching that empty list waits `recheckMs` and then ends as "expired", which
 * makes the reflector list again: one request per `recheckMs` while the collection is missing.
 */
export function optionalCollection<T>(inner: ListerWatcher<T>, recheckMs = 30_000): ListerWatcher<T> {
  return {
    async list(opts: ListOptions, signal: AbortSignal): Promise<ListResult<T>> {
      try {
        return await inner.list(opts, signal);
      } catch (error) {
        if (statusCodeOf(error) !== 404) throw error;
        return { items: [], resourceVersion: ABSENT };
      }
    },
    async watch(opts: WatchOptions, onEvent: WatchEventCallback<T>, signal: AbortSignal): Promise<void> {
      if (opts.resourceVersion !== ABSENT) {
        await inner.watch(opts, onEvent, signal);
        return;
      }
      try {
        await delay(recheckMs, undefined, { signal });
      } catch {
        return; // aborted: the reflector stops or lists again anyway
      }
      throw new KubeApiError('the collection does not exist yet; listing again', {
        statusCode: 410,
        reason: 'Expired',
      });
    },
  };
}
