import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LoopLagGate, nextLimit } from '../../../src/kube/loop-lag-gate.js';
import { WorkQueue } from '../../../src/kube/work-queue.js';

const o = { max: 200, min: 4, targetLagMs: 50, sampleMs: 20 };

/** Resolves once `cond` holds (polled; fails after 5 s). */
async function until(cond: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 5_000; !cond();) {
    assert.ok(Date.now() < deadline, 'not within 5 s');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A few turns of the loop later: an admission goes through the pacer's turn. */
const settled = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

describe('the event-loop lag gate', () => {
  test('halves the limit over the target, adds one under half of it, down to min and up to max', () => {
    assert.equal(nextLimit(200, 51, o), 100);
    assert.equal(nextLimit(5, 500, o), 4);
    assert.equal(nextLimit(100, 10, o), 101);
    assert.equal(nextLimit(200, 0, o), 200);
    assert.equal(nextLimit(100, 30, o), 100, 'between half the target and the target: unchanged');
  });

  test('admits up to the limit; the others wait and are admitted as the limit allows', async () => {
    const gate = new LoopLagGate({ max: 3, min: 1 });
    await gate.acquire();
    await gate.acquire();
    await gate.acquire();
    let admitted = 0;
    const waiting = [gate.acquire(), gate.acquire()].map((p) => p.then(() => admitted++));
    await settled();
    assert.equal(admitted, 0);
    gate.sample(1_000); // late: 3 -> 1
    assert.equal(gate.limit, 1);
    gate.release();
    gate.release();
    await settled();
    assert.equal(admitted, 0, 'two left, one still running: the limit of 1 is reached');
    gate.release();
    await settled();
    assert.equal(admitted, 1);
    gate.sample(0); // on time: 1 -> 2
    await Promise.all(waiting);
    assert.equal(gate.running, 2);
  });

  test('tasks admitted together start a turn apart once a start took the turn’s budget', async () => {
    const gate = new LoopLagGate({ max: 10, turnBudgetMs: 0 });
    const order: string[] = [];
    await Promise.all(
      ['a', 'b'].map(async (name) => {
        await gate.acquire();
        await gate.turn();
        order.push(name);
        setImmediate(() => order.push(`after ${name}`));
      }),
    );
    assert.deepEqual(order.slice(0, 3), ['a', 'after a', 'b']);
    assert.equal(gate.running, 2, 'both hold their place');
  });

  test('work waiting in a shared pacer counts as lag: the limit halves while the loop itself is on time', async () => {
    let waiting = 0;
    const pacer = { turn: () => Promise.resolve(), waitingMs: () => waiting };
    const gate = new LoopLagGate({ max: 64, min: 4, sampleMs: 5, pacer });
    gate.start();
    try {
      waiting = 500;
      await until(() => gate.limit === 4);
      waiting = 0;
      await until(() => gate.limit > 4); // grows again once nothing waits
    } finally {
      gate.stop();
    }
  });

  test('a 429 of a shared server halves the limit once per hold, never below the least', () => {
    const gate = new LoopLagGate({ max: 200, min: 4, throttleHoldMs: 1_000 });
    gate.throttled(10_000);
    assert.equal(gate.limit, 100);
    gate.throttled(10_500); // the answers of requests already in flight: the same signal
    assert.equal(gate.limit, 100);
    gate.throttled(11_000);
    assert.equal(gate.limit, 50);
    for (let t = 12_000; t < 20_000; t += 1_000) gate.throttled(t);
    assert.equal(gate.limit, 4);
    gate.sample(0); // the loop on time again: grows one at a time
    assert.equal(gate.limit, 5);
  });

  test('a work queue behind the gate runs no more keys at once than it admits, and loses none', async () => {
    const gate = new LoopLagGate({ max: 8, min: 2 });
    gate.sample(1_000); // 8 -> 4
    gate.sample(1_000); // 4 -> 2
    const queue = new WorkQueue({ name: 'gated' });
    let running = 0;
    let most = 0;
    const done = new Set<string>();
    const keys = Array.from({ length: 30 }, (_, i) => `k${i}`);
    for (const k of keys) queue.add(k);
    let workers: Promise<void> | undefined;
    const all = new Promise<void>((resolve) => {
      workers = queue.start(
        async (key) => {
          running++;
          most = Math.max(most, running);
          await new Promise((r) => setTimeout(r, 2));
          running--;
          done.add(key);
          if (done.size === keys.length) resolve();
        },
        { concurrency: 8, gate },
      );
    });
    await all;
    await queue.shutDownWithDrain();
    await workers;
    assert.equal(most, 2);
    assert.equal(gate.running, 0, 'every admission released');
  });

  test('behind the gate a run’s follow-up is not kept behind keys that workers took and hold', async () => {
    const gate = new LoopLagGate({ max: 1, min: 1 });
    const queue = new WorkQueue({ name: 'gated follow-ups' });
    const backlog = Array.from({ length: 12 }, (_, i) => `b${i + 1}`);
    const seen: string[] = [];
    for (const k of ['first', ...backlog]) queue.add(k);
    const workers = queue.start(
      async (key) => {
        seen.push(key);
        if (key === 'first') return seen.length === 1 ? { requeueAfter: 5 } : undefined;
        await new Promise((r) => setTimeout(r, 20));
        return undefined;
      },
      { concurrency: 8, gate },
    );
    const deadline = Date.now() + 10_000;
    while (seen.length < backlog.length + 2) {
      assert.ok(Date.now() < deadline, `only ${seen.join(' ')} within 10 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
    const followUp = seen.lastIndexOf('first');
    assert.ok(followUp > 0 && followUp < seen.indexOf('b5'), `follow-up at ${followUp}: ${seen.join(' ')}`);
    queue.shutDown();
    await workers;
  });
});
