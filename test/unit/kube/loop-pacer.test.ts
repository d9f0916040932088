import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import { LoopPacer } from '../../../src/kube/loop-pacer.js';

/** One turn of the event loop later (timers and I/O of the turn between). */
const nextTurn = (): Promise<void> => new Promise((r) => setTimeout(r, 0));

void describe('LoopPacer', () => {
  void test('starts go through in order, as many per turn as the budget holds, each start’s work counted', async () => {
    let clock = 0;
    const pacer = new LoopPacer({ turnBudgetMs: 4, now: () => clock });
    // The loop's turns, counted in each check phase before the pacer's callbacks (an immediate
    // queued in a check phase runs in the next one): not by a timer, which a turn shorter than
    // its millisecond would not let fire.
    let turn = 0;
    let counting = true;
    const count = (): void => {
      turn++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    const perTurn = new Map<number, string[]>();
    try {
      await Promise.all(
        ['a', 'b', 'c', 'd', 'e'].map(async (name) => {
          await pacer.turn();
          perTurn.set(turn, [...(perTurn.get(turn) ?? []), name]);
          // The start's own synchronous work, done before the next start is let through.
          clock += 1.5;
        }),
      );
      await nextTurn();
    } finally {
      counting = false;
    }
    assert.deepEqual(
      [...perTurn.values()],
      [
        ['a', 'b', 'c'],
        ['d', 'e'],
      ],
      '0, 1.5 and 3 ms are under the budget; 4.5 is not',
    );
  });

  void test('nothing starts in the caller’s turn; one start per turn at least, however costly', async () => {
    let clock = 0;
    const pacer = new LoopPacer({ turnBudgetMs: 4, now: () => clock });
    const order: string[] = [];
    const start = async (name: string): Promise<void> => {
      await pacer.turn();
      order.push(name);
      // Queued for the next turn: it runs before a start that was left for that turn.
      setImmediate(() => order.push(`after ${name}`));
      clock += 50;
    };
    const both = Promise.all([start('a'), start('b')]);
    await Promise.resolve();
    assert.deepEqual(order, [], 'not in the caller’s turn');
    await both;
    assert.deepEqual(order.slice(0, 3), ['a', 'after a', 'b'], 'b waited for the next turn');
  });

  void test('on the real clock, a timer due meanwhile runs before the start after a slow one', async () => {
    const pacer = new LoopPacer({ turnBudgetMs: 2 });
    const order: string[] = [];
    const busy = async (name: string, first: boolean): Promise<void> => {
      await pacer.turn();
      order.push(name);
      // Due before 'a' has finished: let through in one turn with 'a', 'b' would come first.
      if (first) setTimeout(() => order.push('timer'), 1);
      const until = performance.now() + 5;
      while (performance.now() < until);
    };
    await Promise.all([busy('a', true), busy('b', false)]);
    await nextTurn();
    assert.deepEqual(order, ['a', 'timer', 'b']);
  });

  void test('with no budget, one start per turn', async () => {
    const pacer = new LoopPacer({ turnBudgetMs: 0 });
    const order: string[] = [];
    await Promise.all(
      ['a', 'b', 'c'].map(async (name) => {
        await pacer.turn();
        order.push(name);
        setImmediate(() => order.push(`after ${name}`));
      }),
    );
    assert.deepEqual(order.slice(0, 5), ['a', 'after a', 'b', 'after b', 'c']);
  });

  void test('a backlog waits in the pacer: a turn queues callbacks for about what it lets through', async () => {
    let clock = 0;
    const pacer = new LoopPacer({ turnBudgetMs: 4, now: () => clock });
    const queued = mock.method(globalThis, 'setImmediate');
    try {
      await Promise.all(
        Array.from({ length: 1_000 }, async () => {
          await pacer.turn();
          clock += 2; // two starts per turn
        }),
      );
    } finally {
      queued.mock.restore();
    }
    // A callback per waiting caller and turn would be about 250,000.
    assert.ok(queued.mock.callCount() < 20 * 1_000, `${queued.mock.callCount()} callbacks queued`);
  });

  void test('how long the oldest next step has waited; starts waiting are not counted', async () => {
    let clock = 0;
    const pacer = new LoopPacer({ turnBudgetMs: 4, now: () => clock });
    const start = pacer.turn();
    assert.equal(pacer.waitingMs(), 0);
    const first = pacer.resume();
    clock += 3;
    const second = pacer.resume();
    clock += 2;
    assert.equal(pacer.waitingMs(), 5);
    await first;
    clock += 10; // over the budget: the second waits for the next turn
    assert.equal(pacer.waitingMs(), 12);
    await second;
    assert.equal(pacer.waitingMs(), 0);
    await start;
  });

  void test('next steps of work under way go before starts, whenever they asked', async () => {
    const pacer = new LoopPacer({ turnBudgetMs: 0 });
    const order: string[] = [];
    await Promise.all([
      pacer.turn().then(() => order.push('start 1')),
      pacer.turn().then(() => order.push('start 2')),
      pacer.resume().then(() => order.push('next step')),
    ]);
    assert.deepEqual(order, ['next step', 'start 1', 'start 2']);
  });

  void test('a start asked for after the others went through gets a turn of its own', async () => {
    let clock = 0;
    const pacer = new LoopPacer({ turnBudgetMs: 4, now: () => clock });
    await pacer.turn();
    clock += 100;
    await nextTurn();
    await pacer.turn(); // would hang if the pacer thought a turn still queued
  });
});
