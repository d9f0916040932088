import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LatestFollower } from '../../../src/kube/latest-follower.js';
import { deferred, type Deferred } from '../../support/deferred.js';

/** Lets every queued promise continuation run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A follower over string keys whose stops finish only when the test says so. */
function harness(): {
  follower: LatestFollower<string, { key: string }>;
  log: string[];
  running: Set<string>;
  maxRunning: () => number;
  finishStop(key: string, error?: Error): void;
  errors: string[];
} {
  const log: string[] = [];
  const running = new Set<string>();
  const stops = new Map<string, Deferred>();
  const errors: string[] = [];
  let max = 0;
  const follower = new LatestFollower<string, { key: string }>({
    start: (key) => {
      if (key === 'broken') throw new Error('cannot start');
      log.push(`start ${key}`);
      running.add(key);
      max = Math.max(max, running.size);
      return { key };
    },
    stop: async ({ key }) => {
      log.push(`stop ${key}`);
      const d = deferred();
      stops.set(key, d);
      try {
        await d.promise;
      } finally {
        running.delete(key);
        log.push(`stopped ${key}`);
      }
    },
    same: (a, b) => a === b,
    onError: (error, phase) => {
      errors.push(`${phase}: ${error instanceof Error ? error.message : String(error)}`);
    },
  });
  return {
    follower,
    log,
    running,
    maxRunning: () => max,
    finishStop: (key, error) => {
      const d = stops.get(key);
      assert.ok(d, `a stop of ${key} is pending`);
      stops.delete(key);
      if (error) d.reject(error);
      else d.resolve();
    },
    errors,
  };
}

/** A harness whose follower was told to follow `keys`, in order, at once. */
function following(...keys: string[]): ReturnType<typeof harness> {
  const h = harness();
  for (const key of keys) h.follower.follow(key);
  return h;
}

describe('LatestFollower', () => {
  test('starts the first key at once, synchronously', () => {
    const h = harness();
    h.follower.follow('a');
    assert.deepEqual(h.log, ['start a']);
    assert.deepEqual(h.follower.current, { key: 'a' });
    assert.equal(h.follower.currentKey, 'a');
  });

  test('the same key again changes nothing', async () => {
    const h = following('a', 'a');
    await settle();
    assert.deepEqual(h.log, ['start a']);
  });

  test('a change starts the new key only after the stop of the old one completed', async () => {
    const h = following('a', 'b');
    await settle();
    assert.deepEqual(h.log, ['start a', 'stop a']);
    assert.equal(h.follower.current, undefined, 'nothing is served while switching');
    h.finishStop('a');
    await settle();
    assert.deepEqual(h.log, ['start a', 'stop a', 'stopped a', 'start b']);
    assert.equal(h.follower.currentKey, 'b');
    assert.equal(h.maxRunning(), 1);
  });

  test('changes during a pending stop coalesce: only the latest key starts', async () => {
    const h = following('a', 'b', 'c');
    await settle();
    h.follower.follow('d');
    h.finishStop('a');
    await settle();
    assert.deepEqual(h.log, ['start a', 'stop a', 'stopped a', 'start d']);
    assert.deepEqual([...h.running], ['d']);
    assert.equal(h.maxRunning(), 1);
  });

  test('going back to the key being stopped starts it again once stopped', async () => {
    const h = following('a', 'b', 'a');
    h.finishStop('a');
    await settle();
    assert.deepEqual(h.log, ['start a', 'stop a', 'stopped a', 'start a']);
    assert.equal(h.follower.currentKey, 'a');
  });

  test('a key given right after the loop finished is not missed', async () => {
    const h = following('a', 'b');
    h.finishStop('a');
    // Queue the next change so that it runs in the microtasks right after the switch to b.
    const after = Promise.resolve().then(() => {
      h.follower.follow('c');
    });
    await after;
    await settle();
    if (h.follower.currentKey === 'b') {
      h.finishStop('b');
      await settle();
    }
    assert.equal(h.follower.currentKey, 'c');
    assert.equal(h.log.filter((l) => l.startsWith('start ')).at(-1), 'start c');
    assert.equal(h.maxRunning(), 1);
  });

  test('a failed stop is reported and the next key still starts', async () => {
    const h = following('a', 'b');
    h.finishStop('a', new Error('watch would not stop'));
    await settle();
    assert.deepEqual(h.errors, ['stop: watch would not stop']);
    assert.equal(h.follower.currentKey, 'b');
  });

  test('a failed start is reported; the next change starts again', async () => {
    const h = harness();
    h.follower.follow('broken');
    assert.deepEqual(h.errors, ['start: cannot start']);
    assert.equal(h.follower.current, undefined);
    h.follower.follow('a');
    await settle();
    assert.equal(h.follower.currentKey, 'a');
  });

  test('close waits for a switch under way, stops what runs and starts nothing more', async () => {
    const h = following('a', 'b');
    let closed = false;
    const closing = h.follower.close().then(() => {
      closed = true;
    });
    h.follower.follow('c');
    h.finishStop('a');
    await settle();
    assert.equal(closed, true);
    await closing;
    assert.deepEqual(h.log, ['start a', 'stop a', 'stopped a']);
    assert.equal(h.follower.current, undefined);
  });

  test('close stops the running thing', async () => {
    const h = harness();
    h.follower.follow('a');
    const closing = h.follower.close();
    await settle();
    h.finishStop('a');
    await closing;
    assert.deepEqual(h.log, ['start a', 'stop a', 'stopped a']);
    assert.equal(h.running.size, 0);
  });
});
