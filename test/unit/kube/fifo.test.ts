import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Fifo } from '../../../src/kube/fifo.js';

void test('Fifo behaves like an array queue across compactions', () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.integer(), fc.constant<'shift'>('shift')), { maxLength: 5_000 }),
      (ops) => {
        const fifo = new Fifo<number>();
        const model: number[] = [];
        for (const op of ops) {
          if (op === 'shift') assert.equal(fifo.shift(), model.shift());
          else {
            fifo.push(op);
            model.push(op);
          }
          assert.equal(fifo.length, model.length);
        }
      },
    ),
    { numRuns: 50 },
  );
  const f = new Fifo<number>();
  for (let i = 0; i < 3_000; i++) f.push(i);
  for (let i = 0; i < 2_500; i++) assert.equal(f.shift(), i);
  assert.equal(f.length, 500);
  f.clear();
  assert.equal(f.shift(), undefined);
});
