/**
 * Lists a whole collection page by page, as client-go's `ListPager`: follows continue
 * tokens and, when a token expires half-way (410), falls back to one unpaged list,
 * which cannot expire in the middle again.
 */
import { isResourceExpired } from './kube-errors.js';
import type { ListerWatcher } from './lister-watcher.js';

/** What to list. */
export interface ListAllOptions {
  /** Page size; 0 or less lists in one request. */
  readonly pageSize: number;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Told when an expired continue token forces the unpaged fallback. */
  readonly onRestart?: (err: unknown) => void;
}

/** Every item of the collection and the resourceVersion of that snapshot. */
export async function listAll<T>(
  lw: ListerWatcher<T>,
  opts: ListAllOptions,
  signal: AbortSignal,
): Promise<{ items: T[]; resourceVersion: string }> {
  const { labelSelector, fieldSelector } = opts;
  let limit = opts.pageSize;
  let items: T[] = [];
  let resourceVersion = '';
  let cont: string | undefined;
  for (;;) {
    let page;
    try {
      page = await lw.list(
        { limit: limit > 0 ? limit : undefined, continue: cont, labelSelector, fieldSelector },
        signal,
      );
    } catch (err) {
      if (cont === undefined || !isResourceExpired(err) || signal.aborted) throw err;
      opts.onRestart?.(err);
      items = [];
      cont = undefined;
      limit = 0;
      continue;
    }
    items.push(...page.items);
    // Every page of one paged list carries the same snapshot resourceVersion.
    resourceVersion = page.resourceVersion;
    if (page.continue === undefined || page.continue === '') return { items, resourceVersion };
    cont = page.continue;
  }
}
