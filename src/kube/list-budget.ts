/**
 * How big a page of a list may be, in bytes rather than items: a tenant's Pod may be as large as
 * the API server stores (etcd refuses a write over 1.5 MiB), so 500 of them are a page of up to
 * 750 MB, and 400 Pods with 250 KB annotations one of 100 MB, beyond the webhook's heap. A list
 * starts with the page the budget holds at the largest object size, grows by what its pages
 * really weigh, halves when an answer breaks the budget (the answer is dropped as its bytes
 * arrive, never held), and asks for one object at a time where one alone is that large.
 * Pure: ./pager.ts applies it; docs/webhook-hardening.md says why these numbers.
 */

/** The largest object the API server stores: etcd's default request limit (`--max-request-bytes`). */
export const MAX_STORED_OBJECT_BYTES = 1.5 * 1024 * 1024;

/** Bytes one list page's answer may take (2 MiB): its text and what it parses to stay a few MB. */
export const LIST_PAGE_BYTES = 2 << 20;

/**
 * Bytes of an answer holding one object (16 MiB): no object a real API server stores comes near,
 * even as JSON whose every character is escaped (six bytes each). Also the cap on a watch event.
 */
export const MAX_OBJECT_ANSWER_BYTES = 16 << 20;

/** Items of one page at most, unless a list says otherwise (client-go's pager default). */
export const MAX_PAGE_ITEMS = 500;

/** The page budget of one list. */
export interface PageBudget {
  /** Items per page at most (the list's `pageSize`). */
  readonly maxItems: number;
  /** Bytes of one page's answer at most; a page of one item may take {@link MAX_OBJECT_ANSWER_BYTES}. */
  readonly bytes: number;
  /** The largest an item can be: the first page holds `bytes / itemBytes` items (at least one). */
  readonly itemBytes: number;
}

const clamp = (n: number, max: number): number => Math.max(1, Math.min(max, Math.floor(n)));

/** The first page's `limit`: what the budget holds if every item is as large as items can be. */
export function firstPageLimit(b: PageBudget): number {
  return clamp(b.bytes / Math.max(1, b.itemBytes), b.maxItems);
}

/** The cap on the answer to a page of `limit` items. */
export function pageAnswerCap(b: PageBudget, limit: number): number {
  return limit === 1 ? Math.max(b.bytes, MAX_OBJECT_ANSWER_BYTES) : b.bytes;
}

/**
 * The next page's `limit` after a page of `items` items answered in `bytes` bytes (undefined:
 * not measured, the limit stays): as many as half the budget holds at that page's mean size (room
 * for items twice the mean), at most twice the last limit, so one page of small items does not
 * open the way to a page of large ones all at once.
 */
export function nextPageLimit(
  b: PageBudget,
  limit: number,
  items: number,
  bytes: number | undefined,
): number {
  if (bytes === undefined) return limit;
  const doubled = Math.min(b.maxItems, limit * 2);
  if (items === 0 || bytes === 0) return clamp(doubled, b.maxItems);
  return clamp(b.bytes / 2 / (bytes / items), doubled);
}

/** The `limit` to ask again with after an answer broke the budget; undefined at one item (nothing smaller). */
export function smallerPageLimit(limit: number): number | undefined {
  return limit > 1 ? Math.floor(limit / 2) : undefined;
}
