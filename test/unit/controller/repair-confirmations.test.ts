import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  RepairConfirmations,
  type ConfirmationClock,
} from '../../../src/controller/direct/repair-confirmations.js';

/** A manual clock: timers fire only when `advance` passes their time. */
class ManualClock implements ConfirmationClock {
  private t = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 0;

  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.t + ms, fn, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== handle);
  }
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = due.at;
      due.fn();
    }
    this.t = end;
  }
}

function setup(maxWaitMs?: number) {
  const clock = new ManualClock();
  const runs: { key: string; at: number }[] = [];
  const c = new RepairConfirmations(
    1000,
    (key) => runs.push({ key, at: clock.now() }),
    maxWaitMs ?? 10_000,
    clock,
  );
  return { clock, runs, c };
}

void describe('RepairConfirmations', () => {
  test('one event: the confirmation runs once, the delay after it', () => {
    const { clock, runs, c } = setup();
    c.event('a');
    clock.advance(999);
    assert.deepEqual(runs, []);
    clock.advance(1);
    assert.deepEqual(runs, [{ key: 'a', at: 1000 }]);
    clock.advance(5000);
    assert.equal(runs.length, 1);
    assert.equal(c.size, 0);
  });

  test('a later event moves the confirmation to the delay after the last event', () => {
    const { clock, runs, c } = setup();
    c.event('a');
    clock.advance(800);
    c.event('a'); // the report of a write that is stored after the first confirmation was due
    clock.advance(1000);
    assert.deepEqual(runs, [{ key: 'a', at: 1800 }]);
  });

  test('keys are independent', () => {
    const { clock, runs, c } = setup();
    c.event('a');
    clock.advance(500);
    c.event('b');
    clock.advance(2000);
    assert.deepEqual(runs, [
      { key: 'a', at: 1000 },
      { key: 'b', at: 1500 },
    ]);
  });

  test('a stream of events still gets a confirmation every maxWait, and one after its last event', () => {
    const { clock, runs, c } = setup(3000);
    for (let t = 0; t <= 6000; t += 500) {
      c.event('a');
      clock.advance(500);
    }
    // Events every 500 ms from 0 to 6000 ms: a confirmation every 3 s during the stream, then
    // one 1 s after the last event.
    assert.deepEqual(
      runs.map((r) => r.at),
      [3000, 6000],
    );
    clock.advance(2000);
    assert.deepEqual(
      runs.map((r) => r.at),
      [3000, 6000, 7000],
    );
  });

  test('stop cancels what is pending', () => {
    const { clock, runs, c } = setup();
    c.event('a');
    c.stop();
    clock.advance(5000);
    assert.deepEqual(runs, []);
  });
});
