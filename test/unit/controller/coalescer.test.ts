import assert from 'node:assert/strict';
import { afterEach, describe, mock, test } from 'node:test';
import { Coalescer } from '../../../src/controller/annotate/coalescer.js';

describe('coalescing a burst of changes', () => {
  afterEach(() => {
    mock.timers.reset();
  });

  const setup = (windowMs: number, maxDelayMs?: number) => {
    mock.timers.enable({ apis: ['setTimeout'] });
    let now = 0;
    let fired = 0;
    const c = new Coalescer(
      () => {
        fired++;
      },
      windowMs,
      maxDelayMs,
      () => now,
    );
    const advance = (ms: number): void => {
      now += ms;
      mock.timers.tick(ms);
    };
    /** A change, then `ms` of time, for each of `waits`. */
    const changesApart = (...waits: number[]): void => {
      for (const ms of waits) {
        c.trigger();
        advance(ms);
      }
    };
    return { c, advance, changesApart, fired: () => fired };
  };

  test('a burst within the window fires once, a window after the last trigger', () => {
    const { c, advance, changesApart, fired } = setup(1000);
    changesApart(400, 400);
    c.trigger();
    assert.equal(c.pending(), true);
    advance(999);
    assert.equal(fired(), 0);
    advance(1);
    assert.equal(fired(), 1);
    assert.equal(c.pending(), false);
    advance(5000);
    assert.equal(fired(), 1);
  });

  test('a continuous stream still fires at the ceiling', () => {
    const { c, advance, fired } = setup(1000, 3000);
    for (let t = 0; t < 2900; t += 500) {
      c.trigger();
      advance(500);
    }
    // Triggers at 0..2500 every 500 ms: the quiet period never comes, the ceiling (3000) does.
    assert.equal(fired(), 1);
  });

  test('changes after a fire make a new burst; cancel drops a pending one', () => {
    const { c, advance, changesApart, fired } = setup(100);
    changesApart(100, 100);
    assert.equal(fired(), 2);
    c.trigger();
    c.cancel();
    advance(1000);
    assert.equal(fired(), 2);
  });
});
