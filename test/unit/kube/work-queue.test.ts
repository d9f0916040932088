import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ItemExponentialBackoff,
  TokenBucketRateLimiter,
  type RateLimiter,
} from '../../../src/kube/backoff.js';
import type { ReconcileResultKind, WorkQueueMetrics } from '../../../src/kube/metrics-hooks.js';
import { WorkQueue, WorkQueueError } from '../../../src/kube/work-queue.js';

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Polls until `cond` holds; generous so slow machines do not flake. */
async function until(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

const fastLimiter = (): ItemExponentialBackoff => new ItemExponentialBackoff({ baseMs: 1, maxMs: 10 });

/** A queue named `name` that rate-limits by `rateLimiter` alone. */
const limitedQueue = (name: string, rateLimiter: RateLimiter): WorkQueue =>
  new WorkQueue({ name, rateLimiter });

void describe('WorkQueue', () => {
  void test('de-duplicates keys queued more than once', async () => {
    const q = new WorkQueue({ name: 'dedup', rateLimiter: fastLimiter() });
    for (const k of ['a', 'a', 'b', 'a', 'b']) q.add(k);
    assert.equal(q.len(), 2);
    const seen: string[] = [];
    const running = q.start(async (key) => {
      seen.push(key);
      await Promise.resolve();
    });
    await until(() => seen.length === 2 && q.len() === 0, 'two runs');
    await sleep(20);
    assert.deepEqual(seen, ['a', 'b']);
    q.shutDown();
    await running;
  });

  void test('a run’s follow-up goes before the backlog; a retry, an addAfter and an add wait their turn', async () => {
    const q = new WorkQueue({ name: 'follow-ups', rateLimiter: fastLimiter() });
    const backlog = Array.from({ length: 20 }, (_, i) => `b${i + 1}`);
    const seen: string[] = [];
    let firstRuns = 0;
    let failed = false;
    for (const k of ['first', 'failing', 'delayed', 'added', ...backlog]) q.add(k);
    const running = q.start(async (key) => {
      seen.push(key);
      if (key === 'first' && ++firstRuns === 1) return { requeueAfter: 5 };
      if (key === 'failing' && !failed) {
        failed = true;
        throw new Error('once');
      }
      if (key === 'delayed' && seen.filter((k) => k === key).length === 1) q.addAfter(key, 5);
      if (key === 'added' && seen.filter((k) => k === key).length === 1)
        setTimeout(() => {
          q.add(key);
        }, 5);
      if (key.startsWith('b')) await sleep(20);
      return undefined;
    });
    await until(() => seen.length === backlog.length + 8, 'every run', 10_000);
    const followUp = seen.lastIndexOf('first');
    assert.ok(followUp > 0 && followUp < seen.indexOf('b10'), `follow-up at ${followUp}: ${seen.join(' ')}`);
    for (const k of ['failing', 'delayed', 'added'])
      assert.ok(seen.lastIndexOf(k) > seen.indexOf('b20'), `${k} again after the backlog: ${seen.join(' ')}`);
    q.shutDown();
    await running;
  });

  void test('queues only the keys `admit` lets in, also when a delayed add comes due', async () => {
    const mine = new Set(['a']);
    const q = new WorkQueue({ name: 'admit', rateLimiter: fastLimiter(), admit: (k) => mine.has(k) });
    q.add('a');
    q.add('b');
    assert.equal(q.len(), 1);
    q.addAfter('c', 5);
    mine.add('d');
    q.addAfter('d', 5);
    await until(() => q.len() === 2, 'd due');
    await sleep(20);
    assert.equal(q.len(), 2);
    q.shutDown();
  });

  void test('never runs a key concurrently; a key added while running runs once more after', async () => {
    const q = new WorkQueue({ name: 'serial', rateLimiter: fastLimiter() });
    let inFlight = 0;
    let maxInFlight = 0;
    let runs = 0;
    const gate = deferred();
    const running = q.start(
      async () => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        runs++;
        if (runs === 1) await gate.promise;
        inFlight--;
      },
      { concurrency: 4 },
    );
    q.add('a');
    await until(() => runs === 1, 'first run');
    q.add('a');
    q.add('a');
    assert.equal(q.len(), 0, 'a dirty key is not ready while it runs');
    await sleep(20);
    assert.equal(runs, 1, 'no second run while the first is in flight');
    gate.resolve();
    await until(() => runs === 2, 'second run');
    await sleep(20);
    assert.equal(runs, 2, 'the two adds while running collapse into one run');
    assert.equal(maxInFlight, 1);
    q.shutDown();
    await running;
  });

  void test('failures back off per key with growing delays; success forgets', async () => {
    const q = limitedQueue('backoff', new ItemExponentialBackoff({ baseMs: 10, maxMs: 1_000 }));
    const times: number[] = [];
    const retriesSeen: number[] = [];
    const errors: unknown[] = [];
    const running = q.start(
      async (_key, ctx) => {
        await Promise.resolve();
        times.push(performance.now());
        retriesSeen.push(ctx.retries);
        if (times.length <= 3) throw new Error(`boom ${times.length}`);
      },
      { onError: (_k, err) => errors.push(err) },
    );
    q.add('k');
    await until(() => times.length === 4, 'four runs');
    assert.deepEqual(retriesSeen, [0, 1, 2, 3]);
    assert.equal(errors.length, 3);
    const [t0, t1, t2, t3] = times as [number, number, number, number];
    // Delays 10, 20, 40 ms; timers never fire early (allow 1 ms rounding).
    assert.ok(t1 - t0 >= 9, `first retry after ${t1 - t0} ms`);
    assert.ok(t2 - t1 >= 19, `second retry after ${t2 - t1} ms`);
    assert.ok(t3 - t2 >= 39, `third retry after ${t3 - t2} ms`);
    await until(() => q.numRequeues('k') === 0, 'forget after success');
    q.shutDown();
    await running;
  });

  void test('requeueAfter runs the key again after the delay and resets its backoff', async () => {
    const limiter = new ItemExponentialBackoff({ baseMs: 1, maxMs: 10 });
    limiter.when('r'); // a past failure that success must forget
    const q = new WorkQueue({ name: 'requeue', rateLimiter: limiter });
    const times: number[] = [];
    const running = q.start(async () => {
      await Promise.resolve();
      times.push(performance.now());
      return times.length === 1 ? { requeueAfter: 30 } : undefined;
    });
    q.add('r');
    await until(() => times.length === 1, 'first run');
    assert.equal(q.numRequeues('r'), 0);
    await until(() => times.length === 2, 'requeued run');
    assert.ok(times[1]! - times[0]! >= 29, `requeued after ${times[1]! - times[0]!} ms`);
    q.shutDown();
    await running;
  });

  void test('addAfter keeps the earlier deadline; add supersedes a pending addAfter', async () => {
    const q = new WorkQueue({ name: 'delays', rateLimiter: fastLimiter() });
    const seen: string[] = [];
    const running = q.start(async (key) => {
      await Promise.resolve();
      seen.push(key);
    });
    q.addAfter('x', 10_000);
    q.addAfter('x', 20);
    q.addAfter('y', 10_000);
    q.add('y');
    await until(() => seen.length === 2, 'x and y');
    await sleep(40);
    assert.deepEqual([...seen].sort(), ['x', 'y']);
    q.shutDown();
    await running;
  });

  void test('the global token bucket spreads rate-limited adds of distinct keys', async () => {
    const q = limitedQueue('bucket', new TokenBucketRateLimiter({ qps: 50, burst: 1 }));
    const times: number[] = [];
    const running = q.start(
      async () => {
        await Promise.resolve();
        times.push(performance.now());
      },
      { concurrency: 5 },
    );
    const t0 = performance.now();
    for (const k of ['a', 'b', 'c', 'd', 'e']) q.addRateLimited(k);
    await until(() => times.length === 5, 'five runs');
    // One token at once, then one every 20 ms: the last needs at least 80 ms.
    assert.ok(times[4]! - t0 >= 79, `all five done after ${times[4]! - t0} ms`);
    assert.ok(times[0]! - t0 < 1_000);
    q.shutDown();
    await running;
  });

  void test('bounded concurrency: at most N handlers run at once', async () => {
    const q = new WorkQueue({ name: 'bounded', rateLimiter: fastLimiter() });
    let inFlight = 0;
    let maxInFlight = 0;
    let done = 0;
    const running = q.start(
      async () => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await sleep(5);
        inFlight--;
        done++;
      },
      { concurrency: 3 },
    );
    for (let i = 0; i < 12; i++) q.add(`k${i}`);
    await until(() => done === 12, 'all keys');
    assert.equal(maxInFlight, 3);
    q.shutDown();
    await running;
  });

  void test('shutDownWithDrain waits for running handlers, drops queued keys, accepts none', async () => {
    const q = new WorkQueue({ name: 'drain', rateLimiter: fastLimiter() });
    const gate = deferred();
    const seen: string[] = [];
    let aborted = false;
    const running = q.start(async (key, ctx) => {
      seen.push(key);
      await gate.promise;
      aborted = ctx.signal.aborted;
    });
    q.add('a');
    q.add('b');
    q.addAfter('c', 5);
    await until(() => seen.length === 1, 'a running');
    let drained = false;
    const draining = q.shutDownWithDrain().then(() => {
      drained = true;
    });
    assert.ok(q.isShuttingDown());
    q.add('d');
    q.addRateLimited('e');
    assert.equal(q.len(), 0);
    await sleep(20);
    assert.equal(drained, false, 'drain waits for the running handler');
    gate.resolve();
    await draining;
    await running;
    assert.deepEqual(seen, ['a']);
    assert.equal(aborted, false, 'draining does not abort handlers');
  });

  void test('shutDown aborts the signal of running handlers and workers exit', async () => {
    const q = new WorkQueue({ name: 'abort', rateLimiter: fastLimiter() });
    let sawAbort = false;
    const running = q.start(
      (_key, ctx) =>
        new Promise<void>((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            sawAbort = true;
            resolve();
          });
        }),
      { concurrency: 2 },
    );
    q.add('a');
    await sleep(5);
    q.shutDown();
    await running;
    assert.ok(sawAbort);
  });

  void test('a rejected handler neither rejects start() nor leaks an unhandled rejection', async () => {
    const q = limitedQueue('errors', new ItemExponentialBackoff({ baseMs: 1_000, maxMs: 1_000 }));
    let calls = 0;
    const running = q.start(() => {
      calls++;
      return Promise.reject(new Error('nope'));
    });
    q.add('a');
    await until(() => calls === 1 && q.numRequeues('a') === 1, 'one failure');
    q.shutDown();
    await running;
  });

  void test('start rejects misuse', async () => {
    const q = new WorkQueue({ name: 'misuse' });
    await assert.rejects(
      q.start(() => Promise.resolve(), { concurrency: 0 }),
      WorkQueueError,
    );
    const running = q.start(() => Promise.resolve());
    await assert.rejects(
      q.start(() => Promise.resolve()),
      WorkQueueError,
    );
    q.shutDown();
    await running;
  });

  void test('metrics hooks see adds, depth, retries, durations and reconcile results', async () => {
    const counts = { add: 0, retry: 0, queueDuration: 0, workDuration: 0 };
    const depths: number[] = [];
    const results: ReconcileResultKind[] = [];
    let active = 0;
    let maxConc = 0;
    const m: WorkQueueMetrics = {
      add: () => {
        counts.add++;
      },
      depth: (n) => void depths.push(n),
      queueDuration: () => {
        counts.queueDuration++;
      },
      workDuration: () => {
        counts.workDuration++;
      },
      retry: () => {
        counts.retry++;
      },
      unfinishedWork: () => undefined,
      longestRunningProcessor: () => undefined,
    };
    const q = new WorkQueue({
      name: 'metrics',
      rateLimiter: fastLimiter(),
      metrics: { forQueue: (name) => (assert.equal(name, 'metrics'), m) },
      reconcileMetrics: {
        forController: () => ({
          maxConcurrency: (n) => (maxConc = n),
          activeWorkers: (d) => (active += d),
          observe: (r) => void results.push(r),
        }),
      },
    });
    let runsOfB = 0;
    const running = q.start(
      async (key) => {
        await Promise.resolve();
        if (key === 'a') throw new Error('x');
        if (key === 'b' && ++runsOfB === 1) return { requeue: true };
        if (key === 'c') return { requeueAfter: 60_000 };
        return undefined;
      },
      { concurrency: 2 },
    );
    q.add('a');
    q.add('b');
    q.add('c');
    await until(
      () => results.includes('success') && results.includes('error') && results.includes('requeue_after'),
      'results',
    );
    q.shutDown();
    await running;
    assert.equal(maxConc, 2);
    assert.equal(active, 0);
    assert.ok(results.includes('requeue'));
    assert.ok(counts.add >= 3 && counts.retry >= 2 && counts.queueDuration >= 3 && counts.workDuration >= 3);
    assert.ok(depths.includes(3));
  });

  void test('throwing metrics hooks neither break the loop nor leave a key stuck', async () => {
    const boom = (): never => {
      throw new Error('metrics backend down');
    };
    const q = new WorkQueue({
      name: 'bad-metrics',
      rateLimiter: fastLimiter(),
      metrics: {
        forQueue: () => ({
          add: boom,
          depth: boom,
          queueDuration: boom,
          workDuration: boom,
          retry: boom,
          unfinishedWork: boom,
          longestRunningProcessor: boom,
        }),
      },
      reconcileMetrics: {
        forController: () => ({ maxConcurrency: boom, activeWorkers: boom, observe: boom }),
      },
    });
    let runs = 0;
    const running = q.start(async () => {
      await Promise.resolve();
      runs++;
    });
    q.add('a');
    await until(() => runs === 1, 'first run');
    q.add('a');
    await until(() => runs === 2, 'second run');
    q.shutDown();
    await running;
  });
});
