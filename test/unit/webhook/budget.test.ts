import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Budget, BudgetRefusedError } from '../../../src/webhook/budget.js';

/** Whether `p` has settled by the next turns of the event loop. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

const reason = (error: unknown): string =>
  error instanceof BudgetRefusedError ? error.reason : String(error);

describe('Budget', () => {
  test('takes every dimension at once or none; what is held is given back', () => {
    const b = new Budget([2, 100], 10);
    const a = b.tryAcquire([1, 60]);
    assert.ok(a);
    assert.equal(b.tryAcquire([1, 50]), undefined, 'bytes do not fit');
    assert.deepEqual(b.inUse, [1, 60], 'nothing taken by the refused try');
    const c = b.tryAcquire([1, 40]);
    assert.ok(c);
    assert.equal(b.tryAcquire([0, 0]) !== undefined, true, 'an empty request always fits');
    assert.equal(b.tryAcquire([1, 0]), undefined, 'no place left');
    a.release();
    a.release();
    assert.deepEqual(b.inUse, [1, 40], 'a second release gives back nothing more');
    c.shrink([1, 0]);
    assert.deepEqual(b.inUse, [1, 0]);
    c.release();
    assert.deepEqual(b.inUse, [0, 0]);
  });

  test('a waiter gets room when enough is given back; a smaller later one passes a larger earlier one', async () => {
    const b = new Budget([100], 10);
    const held = b.tryAcquire([90]);
    assert.ok(held);
    const large = b.acquire([60]);
    const small = b.acquire([10]);
    assert.equal(await settled(small), true, 'the small one fits at once');
    assert.equal(await settled(large), false);
    assert.equal(b.waiting, 1);
    held.release();
    const lease = await large;
    assert.deepEqual(b.inUse, [70]);
    lease.release();
    (await small).release();
    assert.deepEqual(b.inUse, [0]);
  });

  test('shrinking admits waiters too', async () => {
    const b = new Budget([1, 100], 10);
    const held = b.tryAcquire([1, 100]);
    assert.ok(held);
    const waiter = b.acquire([0, 50]);
    held.shrink([1, 40]);
    (await waiter).release();
    held.release();
    assert.deepEqual(b.inUse, [0, 0]);
  });

  test('refusals: more than the whole budget, too many waiting, no room in time, the request gone', async () => {
    const b = new Budget([10], 1);
    await assert.rejects(b.acquire([11]), (e) => reason(e) === 'never');
    const held = b.tryAcquire([10]);
    assert.ok(held);
    const gone = new AbortController();
    const first = b.acquire([5], { signal: gone.signal });
    await assert.rejects(b.acquire([5]), (e) => reason(e) === 'queue-full');
    gone.abort();
    await assert.rejects(first, (e) => reason(e) === 'aborted');
    assert.equal(b.waiting, 0);
    await assert.rejects(b.acquire([5], { deadline: Date.now() + 20 }), (e) => reason(e) === 'timeout');
    assert.equal(b.waiting, 0, 'a refused waiter is gone from the queue');
    const aborted = new AbortController();
    aborted.abort();
    await assert.rejects(b.acquire([5], { signal: aborted.signal }), (e) => reason(e) === 'aborted');
    held.release();
    assert.deepEqual(b.inUse, [0], 'refused waiters took nothing');
  });
});
