import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KubeApiError } from '../../../src/kube/kube-errors.js';
import {
  LIST_PAGE_BYTES,
  MAX_OBJECT_ANSWER_BYTES,
  MAX_STORED_OBJECT_BYTES,
  firstPageLimit,
  nextPageLimit,
  pageAnswerCap,
  smallerPageLimit,
} from '../../../src/kube/list-budget.js';
import type { ListOptions, ListResult, ListerWatcher } from '../../../src/kube/lister-watcher.js';
import { forEachPage, listAll } from '../../../src/kube/pager.js';
import { AnswerTooLargeError } from '../../../src/kube/request-limits.js';

interface Item {
  readonly name: string;
  readonly pad?: string;
}

/**
 * A collection of items of the given sizes in bytes, listed as an API server pages it (the
 * continue token is the next index); an answer over `maxBytes` fails as KubeListWatch's does,
 * and the size of each answer is reported. Records every query and the largest answer.
 */
class SizedCollection implements ListerWatcher<Item> {
  readonly asked: ListOptions[] = [];
  largest = 0;
  /** Continue tokens refused once with 410. */
  expire = new Set<string>();

  constructor(private readonly sizes: readonly number[]) {}

  list(opts: ListOptions): Promise<ListResult<Item>> {
    this.asked.push(opts);
    const token = opts.continue;
    if (token !== undefined && this.expire.delete(token))
      return Promise.reject(new KubeApiError('expired', { statusCode: 410, reason: 'Expired' }));
    const from = token === undefined ? 0 : Number(token);
    const to = Math.min(this.sizes.length, from + (opts.limit ?? this.sizes.length));
    const bytes = this.sizes.slice(from, to).reduce((a, b) => a + b, 0);
    if (bytes > (opts.maxBytes ?? Infinity))
      return Promise.reject(new AnswerTooLargeError('list items', opts.maxBytes ?? 0));
    this.largest = Math.max(this.largest, bytes);
    const items = this.sizes
      .slice(from, to)
      .map((size, i) => ({ name: `i${from + i}`, pad: 'x'.repeat(4) + String(size) }));
    return Promise.resolve({
      items,
      resourceVersion: '7',
      continue: to < this.sizes.length ? String(to) : undefined,
      bytes,
    });
  }

  watch(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
}

const signal = (): AbortSignal => new AbortController().signal;
const KB = 1000;
const budget = { maxItems: 500, bytes: LIST_PAGE_BYTES, itemBytes: MAX_STORED_OBJECT_BYTES };

void describe('list pages by bytes (list-budget)', () => {
  void test('the first page holds what the budget holds of the largest objects, at least one', () => {
    assert.equal(firstPageLimit(budget), 1);
    assert.equal(firstPageLimit({ ...budget, itemBytes: 10 * KB }), 209);
    assert.equal(firstPageLimit({ ...budget, itemBytes: 1 }), 500);
    assert.equal(firstPageLimit({ ...budget, bytes: 1 }), 1);
  });

  void test('the next page fits twice the last mean in the budget and at most doubles', () => {
    // 250 KB objects: a page of about 4 (1 MB, half the budget).
    assert.equal(nextPageLimit(budget, 1, 1, 250 * KB), 2);
    assert.equal(nextPageLimit(budget, 2, 2, 500 * KB), 4);
    assert.equal(nextPageLimit(budget, 4, 4, 1_000 * KB), 4);
    assert.equal(nextPageLimit(budget, 16, 16, 4_000 * KB), 4);
    // Small objects: doubling up to the list's most items.
    assert.equal(nextPageLimit(budget, 256, 256, 256 * KB), 500);
    assert.equal(nextPageLimit(budget, 500, 500, 500 * KB), 500);
    assert.equal(nextPageLimit(budget, 8, 0, 100), 16, 'an empty page of a selected list grows');
    assert.equal(nextPageLimit(budget, 8, 8, undefined), 8, 'unmeasured: stays');
    assert.equal(nextPageLimit(budget, 3, 3, 3 * MAX_STORED_OBJECT_BYTES), 1);
  });

  void test('an answer over the budget is asked again with half, down to one, which may take one object', () => {
    assert.equal(smallerPageLimit(9), 4);
    assert.equal(smallerPageLimit(2), 1);
    assert.equal(smallerPageLimit(1), undefined);
    assert.equal(pageAnswerCap(budget, 2), LIST_PAGE_BYTES);
    assert.equal(pageAnswerCap(budget, 1), MAX_OBJECT_ANSWER_BYTES);
  });
});

void describe('listAll', () => {
  void test('400 objects of 250 KB: no page over the budget, every object listed once', async () => {
    const lw = new SizedCollection(Array.from({ length: 400 }, () => 250 * KB));
    const { items, resourceVersion } = await listAll(lw, { pageSize: 500 }, signal());
    assert.equal(items.length, 400);
    assert.equal(new Set(items.map((i) => i.name)).size, 400);
    assert.equal(resourceVersion, '7');
    assert.ok(lw.largest <= LIST_PAGE_BYTES, `largest page ${lw.largest}`);
    assert.deepEqual(
      lw.asked.slice(0, 4).map((o) => o.limit),
      [1, 2, 4, 4],
    );
    // Pages of 1, 2, then 4 (half the budget at 250 KB each); none refused.
    assert.equal(lw.asked.length, 2 + Math.ceil(397 / 4));
  });

  void test('without the budget (the old pager), one page of 500 holds the whole 100 MB', async () => {
    const lw = new SizedCollection(Array.from({ length: 400 }, () => 250 * KB));
    await listAll(lw, { pageSize: 500, pageBytes: Infinity, itemBytes: 0 }, signal());
    assert.equal(lw.asked.length, 1);
    assert.equal(lw.largest, 100_000 * KB);
  });

  void test('small objects grow the page to the most items: few requests', async () => {
    const lw = new SizedCollection(Array.from({ length: 5000 }, () => 2 * KB));
    const { items } = await listAll(lw, { pageSize: 500 }, signal());
    assert.equal(items.length, 5000);
    assert.deepEqual(
      lw.asked.slice(0, 11).map((o) => o.limit),
      [1, 2, 4, 8, 16, 32, 64, 128, 256, 500, 500],
    );
    assert.ok(lw.asked.length <= 20, `${lw.asked.length} requests`);
  });

  void test('a page broken by a large object is asked again in halves from the same token; one alone may be large', async () => {
    // Small objects first: the page has grown to hundreds of items when the two large ones come.
    const sizes = Array.from({ length: 600 }, () => 1 * KB);
    sizes[500] = 1_400 * KB;
    sizes[501] = 1_400 * KB;
    const lw = new SizedCollection(sizes);
    const shrunk: number[] = [];
    const { items } = await listAll(lw, { pageSize: 500, onShrink: (limit) => shrunk.push(limit) }, signal());
    assert.equal(items.length, 600);
    assert.ok(shrunk.length > 0, 'asked again with fewer');
    for (let i = 1; i < lw.asked.length; i++) {
      const [before, now] = [lw.asked[i - 1], lw.asked[i]];
      if (before?.continue === now?.continue) assert.ok((now?.limit ?? 0) < (before?.limit ?? 0), 'halved');
    }
    assert.ok(lw.largest <= LIST_PAGE_BYTES, `largest page ${lw.largest}`);
  });

  void test('an object larger than the budget is listed on its own', async () => {
    const lw = new SizedCollection([1 * KB, 3_000 * KB, 1 * KB]);
    const { items } = await listAll(lw, { pageSize: 500, itemBytes: 1 }, signal());
    assert.equal(items.length, 3);
    assert.ok(lw.asked.some((o) => o.limit === 1 && o.maxBytes === MAX_OBJECT_ANSWER_BYTES));
  });

  void test('one object over what one answer may take fails the list (no endless halving)', async () => {
    const lw = new SizedCollection([MAX_OBJECT_ANSWER_BYTES + 1]);
    await assert.rejects(listAll(lw, { pageSize: 500 }, signal()), AnswerTooLargeError);
    assert.equal(lw.asked.length, 1);
  });

  void test('the transform shapes each page as it arrives', async () => {
    const lw = new SizedCollection([10, 20, 30]);
    let seen = 0;
    const { items } = await listAll(
      lw,
      {
        pageSize: 500,
        transform: (i) => {
          seen++;
          return { name: i.name };
        },
      },
      signal(),
    );
    assert.equal(seen, 3);
    assert.deepEqual(items, [{ name: 'i0' }, { name: 'i1' }, { name: 'i2' }]);
  });

  void test('an expired continue token starts the list over, paged, and nothing of the first try stays', async () => {
    const lw = new SizedCollection(Array.from({ length: 6 }, () => 10));
    lw.expire.add('3');
    const restarts: unknown[] = [];
    const { items } = await listAll(
      lw,
      { pageSize: 500, itemBytes: LIST_PAGE_BYTES, onRestart: (e) => restarts.push(e) },
      signal(),
    );
    assert.equal(restarts.length, 1);
    assert.deepEqual(
      items.map((i) => i.name),
      ['i0', 'i1', 'i2', 'i3', 'i4', 'i5'],
    );
    assert.ok(
      lw.asked.every((o) => o.limit !== undefined),
      'never unpaged',
    );
  });

  void test('forEachPage hands over each page before asking for the next', async () => {
    const lw = new SizedCollection([10, 10, 10, 10]);
    const seen: number[] = [];
    await forEachPage(lw, { pageSize: 2, itemBytes: LIST_PAGE_BYTES / 2 }, signal(), (page) => {
      seen.push(lw.asked.length, page.length);
    });
    assert.deepEqual(seen, [1, 2, 2, 2]);
  });
});
