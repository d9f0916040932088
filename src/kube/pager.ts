/**
 * Lists a whole collection page by page, as client-go's `ListPager`, with pages bounded in bytes
 * (./list-budget.ts): each page's answer is capped as it arrives, a page that breaks the cap is
 * asked again with half the items, and each page is shaped by the caller's transform before the
 * next is asked for, so what a list holds is its items as transformed, plus one page. A continue
 * token that expires half-way (410) starts the list over, paged again: an unpaged list of a large
 * collection is the one answer no budget holds.
 */
import { isResourceExpired } from './kube-errors.js';
import {
  LIST_PAGE_BYTES,
  MAX_STORED_OBJECT_BYTES,
  firstPageLimit,
  nextPageLimit,
  pageAnswerCap,
  smallerPageLimit,
  type PageBudget,
} from './list-budget.js';
import type { ListerWatcher } from './lister-watcher.js';
import { AnswerTooLargeError, requestBoundIn } from './request-limits.js';

/** What to list, and how large its pages may be. */
export interface ListAllOptions<T> {
  /** Items per page at most; 0 or less lists in one request (no byte budget then but the access's). */
  readonly pageSize: number;
  /** Bytes of one page's answer at most (default {@link LIST_PAGE_BYTES}). */
  readonly pageBytes?: number;
  /** The largest one item can be (default {@link MAX_STORED_OBJECT_BYTES}): sizes the first page. */
  readonly itemBytes?: number;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Applied to each item as its page arrives: what the list keeps of it. */
  readonly transform?: (item: T) => T;
  /** Told when an expired continue token forces the list to start over. */
  readonly onRestart?: (err: unknown) => void;
  /** Told when a page broke the byte budget and is asked again with `limit` items. */
  readonly onShrink?: (limit: number) => void;
}

/** Restarts after expired continue tokens before the 410 is the caller's (its own backoff and relist). */
const MAX_RESTARTS = 3;

/** The page budget `opts` give. */
export function pageBudgetOf(
  opts: Pick<ListAllOptions<unknown>, 'pageSize' | 'pageBytes' | 'itemBytes'>,
): PageBudget {
  return {
    maxItems: opts.pageSize,
    bytes: opts.pageBytes ?? LIST_PAGE_BYTES,
    itemBytes: opts.itemBytes ?? MAX_STORED_OBJECT_BYTES,
  };
}

/**
 * Calls `onPage` with each page of the collection, transformed, in order; resolves with the
 * snapshot's resourceVersion. A page is never asked for before `onPage` returned for the last.
 * `onPage` is told `restart` first when the list starts over (an expired token).
 */
export async function forEachPage<T>(
  lw: ListerWatcher<T>,
  opts: ListAllOptions<T>,
  signal: AbortSignal,
  onPage: (items: T[], restart: boolean) => void | Promise<void>,
): Promise<{ resourceVersion: string }> {
  const { labelSelector, fieldSelector, transform } = opts;
  const paged = opts.pageSize > 0;
  const budget = pageBudgetOf(opts);
  let limit = paged ? firstPageLimit(budget) : 0;
  let cont: string | undefined;
  let restarts = 0;
  let restart = false;
  for (;;) {
    let page;
    try {
      page = await lw.list(
        {
          limit: paged ? limit : undefined,
          continue: cont,
          labelSelector,
          fieldSelector,
          maxBytes: paged ? pageAnswerCap(budget, limit) : undefined,
        },
        signal,
      );
    } catch (err) {
      if (signal.aborted) throw err;
      const smaller =
        paged && requestBoundIn(err) instanceof AnswerTooLargeError ? smallerPageLimit(limit) : undefined;
      if (smaller !== undefined) {
        limit = smaller;
        opts.onShrink?.(limit);
        continue;
      }
      if (cont === undefined || !isResourceExpired(err) || restarts >= MAX_RESTARTS) throw err;
      restarts++;
      opts.onRestart?.(err);
      cont = undefined;
      restart = true;
      limit = paged ? firstPageLimit(budget) : 0;
      continue;
    }
    const items = transform ? page.items.map(transform) : page.items;
    await onPage(items, restart);
    restart = false;
    if (paged) limit = nextPageLimit(budget, limit, page.items.length, page.bytes);
    if (page.continue === undefined || page.continue === '') return { resourceVersion: page.resourceVersion };
    cont = page.continue;
  }
}

/** Every item of the collection (transformed) and the resourceVersion of that snapshot. */
export async function listAll<T>(
  lw: ListerWatcher<T>,
  opts: ListAllOptions<T>,
  signal: AbortSignal,
): Promise<{ items: T[]; resourceVersion: string }> {
  let items: T[] = [];
  const { resourceVersion } = await forEachPage(lw, opts, signal, (page, restart) => {
    // Every page of one paged list carries the same snapshot; a restart begins another.
    if (restart) items = [];
    for (const item of page) items.push(item);
  });
  return { items, resourceVersion };
}
