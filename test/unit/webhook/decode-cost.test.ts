import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SMALL_BODY_FACTOR, UNSCANNED_BYTES, decodeCost } from '../../../src/webhook/decode-cost.js';

const bytes = (text: string): Buffer => Buffer.from(text);

test('a small body is charged its worst case without a scan', () => {
  assert.equal(decodeCost(bytes('{"a":1}')), 7 * SMALL_BODY_FACTOR);
  const small = bytes('x'.repeat(UNSCANNED_BYTES));
  assert.equal(decodeCost(small), UNSCANNED_BYTES * SMALL_BODY_FACTOR);
});

test('a larger body is charged by its structure: nesting and members cost far more than text', () => {
  const size = 1_000_000;
  const text = decodeCost(bytes(`"${'x'.repeat(size - 2)}"`));
  const nested = decodeCost(bytes(`${'['.repeat(size / 2)}${']'.repeat(size / 2)}`));
  const members = decodeCost(
    bytes(
      `{${Array.from({ length: size / 8 }, (_, i) => `"${(i % 1e6).toString(36).padStart(4, '0')}":1`).join(',')}}`.slice(
        0,
        size,
      ),
    ),
  );
  assert.ok(text >= 4 * size && text < 5 * size, `text ${text}`);
  assert.ok(nested > 30 * size, `nested ${nested}`);
  assert.ok(members > 20 * size, `members ${members}`);
});

test('a Pod of mostly text costs a few times its size', () => {
  const pod = {
    metadata: { name: 'p', annotations: { a: 'x'.repeat(20_000) } },
    spec: { containers: [{ name: 'c', image: 'nginx', env: [{ name: 'A', value: '1' }] }] },
  };
  const body = bytes(JSON.stringify(pod));
  assert.ok(body.length > UNSCANNED_BYTES);
  assert.ok(decodeCost(body) < 5 * body.length);
});
