import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Clock } from '../../../src/kube/backoff.js';
import { RateLimitOptionsError, RuntimeRateLimiter } from '../../../src/drift/runtime-rate-limiter.js';

class FakeClock implements Clock {
  t = 10_000;
  now(): number {
    return this.t;
  }
}

describe('RuntimeRateLimiter', () => {
  test('allows the burst, then tells how long until the next token', () => {
    const clock = new FakeClock();
    const limiter = new RuntimeRateLimiter({ perSecond: 2, burst: 3, clock });
    assert.deepEqual(
      [1, 2, 3].map(() => limiter.tryTake('rt-1')),
      [0, 0, 0],
    );
    assert.equal(limiter.tryTake('rt-1'), 500);
    clock.t += 250;
    assert.equal(limiter.tryTake('rt-1'), 250);
    clock.t += 250;
    assert.equal(limiter.tryTake('rt-1'), 0);
  });

  test('refused requests take no token and leave no debt', () => {
    const clock = new FakeClock();
    const limiter = new RuntimeRateLimiter({ perSecond: 1, burst: 1, clock });
    assert.equal(limiter.tryTake('rt-1'), 0);
    for (let i = 0; i < 10_000; i++) assert.ok(limiter.tryTake('rt-1') > 0);
    clock.t += 1000;
    assert.equal(limiter.tryTake('rt-1'), 0, 'one second after the last success, after a flood');
  });

  test('each runtime has its own bucket', () => {
    const clock = new FakeClock();
    const limiter = new RuntimeRateLimiter({ perSecond: 1, burst: 2, clock });
    for (let i = 0; i < 100; i++) limiter.tryTake('noisy');
    assert.ok(limiter.tryTake('noisy') > 0);
    assert.deepEqual([limiter.tryTake('quiet'), limiter.tryTake('quiet')], [0, 0]);
  });

  test('refilled buckets are forgotten, so memory follows the busy runtimes only', () => {
    const clock = new FakeClock();
    const limiter = new RuntimeRateLimiter({ perSecond: 10, burst: 1, clock });
    for (let i = 0; i < 5000; i++) limiter.tryTake(`rt-${i}`);
    const tracked = (): number => limiter.tracked;
    assert.equal(tracked(), 5000);
    clock.t += 1000;
    for (let i = 0; i < 5000; i++) limiter.tryTake('busy');
    assert.ok(tracked() < 10, `${tracked()} buckets left`);
  });

  test('rejects nonsensical options', () => {
    assert.throws(() => new RuntimeRateLimiter({ perSecond: 0, burst: 1 }), RateLimitOptionsError);
    assert.throws(() => new RuntimeRateLimiter({ perSecond: 1, burst: 0 }), RateLimitOptionsError);
  });
});
