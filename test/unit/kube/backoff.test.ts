import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  Backoff,
  BackoffOptionsError,
  ItemExponentialBackoff,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
  backoffDelay,
  defaultControllerRateLimiter,
  type Clock,
} from '../../../src/kube/backoff.js';

class FakeClock implements Clock {
  t = 1_000;
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

void describe('backoffDelay', () => {
  void test('grows by factor and is capped', () => {
    const opts = { baseMs: 10, maxMs: 100, factor: 3 };
    assert.deepEqual(
      [0, 1, 2, 3, 50, 5000].map((n) => backoffDelay(n, opts)),
      [10, 30, 90, 100, 100, 100],
    );
  });

  void test('jitter adds at most the jitter fraction', () => {
    fc.assert(
      fc.property(
        fc.nat(40),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        (n, jitter, r) => {
          const opts = { baseMs: 5, maxMs: 60_000, jitter, random: () => r };
          const plain = backoffDelay(n, { baseMs: 5, maxMs: 60_000 });
          const d = backoffDelay(n, opts);
          return d >= plain && d <= plain * (1 + jitter);
        },
      ),
    );
  });

  void test('invalid options are rejected', () => {
    assert.throws(() => new Backoff({ baseMs: 10, maxMs: 5 }), BackoffOptionsError);
    assert.throws(() => new Backoff({ baseMs: 1, maxMs: 5, jitter: 2 }), BackoffOptionsError);
    assert.throws(() => new TokenBucketRateLimiter({ qps: 0, burst: 1 }), BackoffOptionsError);
  });
});

void describe('Backoff', () => {
  void test('next grows, reset starts over', () => {
    const b = new Backoff({ baseMs: 1, maxMs: 8 });
    assert.deepEqual([b.next(), b.next(), b.next(), b.next(), b.next()], [1, 2, 4, 8, 8]);
    assert.equal(b.attempts(), 5);
    b.reset();
    assert.equal(b.next(), 1);
  });
});

void describe('ItemExponentialBackoff', () => {
  void test('tracks failures per key and forget resets', () => {
    const l = new ItemExponentialBackoff({ baseMs: 5, maxMs: 1000 });
    assert.deepEqual([l.when('a'), l.when('a'), l.when('a')], [5, 10, 20]);
    assert.equal(l.when('b'), 5, 'keys are independent');
    assert.equal(l.retries('a'), 3);
    l.forget('a');
    assert.equal(l.retries('a'), 0);
    assert.equal(l.when('a'), 5);
    assert.equal(l.retries('b'), 1);
  });
});

void describe('TokenBucketRateLimiter', () => {
  void test('burst passes, then tokens are reserved at qps', () => {
    const clock = new FakeClock();
    const l = new TokenBucketRateLimiter({ qps: 10, burst: 2, clock });
    assert.deepEqual([l.when('a'), l.when('b'), l.when('c'), l.when('d')].map(Math.round), [0, 0, 100, 200]);
    clock.advance(1_000);
    // 1 s refills 10 tokens, minus the 2 owed, capped at burst.
    assert.equal(l.when('e'), 0);
    assert.equal(l.when('f'), 0);
    assert.equal(Math.round(l.when('g')), 100);
    assert.equal(l.retries('a'), 0);
  });
});

void describe('MaxOfRateLimiter', () => {
  void test('takes the longest delay and forgets everywhere', () => {
    const clock = new FakeClock();
    const per = new ItemExponentialBackoff({ baseMs: 50, maxMs: 1000 });
    const bucket = new TokenBucketRateLimiter({ qps: 1, burst: 1, clock });
    const l = new MaxOfRateLimiter(per, bucket);
    assert.equal(l.when('a'), 50); // bucket 0, item 50
    assert.equal(Math.round(l.when('b')), 1000); // bucket 1000, item 50
    assert.equal(l.retries('a'), 1);
    l.forget('a');
    assert.equal(l.retries('a'), 0);
    assert.throws(() => new MaxOfRateLimiter(), BackoffOptionsError);
  });

  void test('defaultControllerRateLimiter has client-go defaults', () => {
    const clock = new FakeClock();
    const l = defaultControllerRateLimiter({ clock });
    assert.deepEqual([l.when('x'), l.when('x'), l.when('x')], [5, 10, 20]);
    for (let i = 0; i < 200; i++) l.when('x');
    assert.equal(l.when('x'), 1_000_000, 'per-key cap is 1000 s');
  });
});
