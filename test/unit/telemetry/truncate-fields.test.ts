import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  truncateString,
  truncateValue,
  type TruncationLimits,
} from '../../../src/telemetry/truncate-fields.js';

const SMALL: TruncationLimits = { maxString: 10, maxItems: 3, maxKeys: 3, maxDepth: 2 };

describe('truncateString', () => {
  test('keeps short strings and cuts long ones, saying how much was cut', () => {
    assert.equal(truncateString('short', 10), 'short');
    assert.equal(truncateString('x'.repeat(10), 10), 'x'.repeat(10));
    assert.equal(truncateString('x'.repeat(25), 10), `${'x'.repeat(10)}…[15 more characters]`);
  });

  test('defaults to a few hundred characters', () => {
    const cut = truncateString('n'.repeat(3_000_000));
    assert.ok(cut.length < 400, `cut to ${cut.length}`);
    assert.ok(cut.startsWith('n'.repeat(300)));
  });
});

describe('truncateValue', () => {
  test('returns the very same object when nothing is over a limit', () => {
    const fields = { namespace: 'a', list: ['x', 'y'], nested: { n: 1 } };
    assert.equal(truncateValue(fields, SMALL), fields);
  });

  test('cuts strings at any depth, without touching the input', () => {
    const fields = { namespace: 'n'.repeat(20), nested: { name: 'm'.repeat(11) } };
    const out = truncateValue(fields, SMALL) as { namespace: string; nested: { name: string } };
    assert.equal(out.namespace, `${'n'.repeat(10)}…[10 more characters]`);
    assert.equal(out.nested.name, `${'m'.repeat(10)}…[1 more characters]`);
    assert.equal(fields.namespace.length, 20, 'the input is unchanged');
  });

  test('keeps the first members of long arrays and the first keys of wide objects', () => {
    assert.deepEqual(truncateValue(['a', 'b', 'c', 'd', 'e'], SMALL), ['a', 'b', 'c', '…[2 more items]']);
    assert.deepEqual(truncateValue({ a: 1, b: 2, c: 3, d: 4, e: 5 }, SMALL), {
      a: 1,
      b: 2,
      c: 3,
      '…': '2 more keys',
    });
  });

  test('long keys are cut too', () => {
    assert.deepEqual(Object.keys(truncateValue({ ['k'.repeat(20)]: 1 }, SMALL) as object), [
      `${'k'.repeat(10)}…[10 more characters]`,
    ]);
  });

  test('stops at the depth limit', () => {
    assert.deepEqual(truncateValue({ a: { b: { c: 1 } }, l: [[1]] }, SMALL), {
      a: { b: '[object]' },
      l: ['[array of 1]'],
    });
  });

  test('byte buffers become their size; errors and class instances are left to the serializers', () => {
    const error = new Error('e'.repeat(50));
    const date = new Date(0);
    const out = truncateValue({ body: Buffer.alloc(3_000_000), err: error, at: date }, SMALL) as Record<
      string,
      unknown
    >;
    assert.equal(out.body, '[Buffer of 3000000 bytes]');
    assert.equal(out.err, error);
    assert.equal(out.at, date);
  });

  test('a "__proto__" key stays a member, it never becomes the prototype', () => {
    const input = JSON.parse('{"__proto__": {"polluted": "p"}, "x": "y"}') as object;
    const out = truncateValue({ nested: input, long: 'l'.repeat(20) }, SMALL) as { nested: object };
    assert.equal(Object.getPrototypeOf(out.nested), Object.prototype);
    assert.ok(Object.hasOwn(out.nested, '__proto__'));
  });
});
