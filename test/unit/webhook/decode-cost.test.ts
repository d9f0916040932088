import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SMALL_BODY_FACTOR, UNSCANNED_BYTES, decodeCost } from '../../../src/webhook/decode-cost.js';

const bytes = (text: string): Buffer => Buffer.from(text);

/** The estimate written the plain way: a byte at a time, tracking strings and escapes. */
function reference(body: Buffer): number {
  const weight: Record<number, number> = { 0x7b: 64, 0x5b: 64, 0x3a: 200, 0x2c: 24 };
  let structure = 0;
  let inString = false;
  let escaped = false;
  for (const c of body) {
    if (inString) {
      if (escaped) escaped = false;
      else if (c === 0x5c) escaped = true;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
      structure += 16;
    } else structure += weight[c] ?? 0;
  }
  return body.length * 4 + structure;
}

test('a small body is charged its worst case without a scan', () => {
  assert.equal(decodeCost(bytes('{"a":1}')), 7 * SMALL_BODY_FACTOR);
  const small = bytes('x'.repeat(UNSCANNED_BYTES));
  assert.equal(decodeCost(small), UNSCANNED_BYTES * SMALL_BODY_FACTOR);
});

test('a larger body is charged by its structure outside strings: nesting and members cost far more than text', () => {
  const size = 1_000_000;
  const text = decodeCost(bytes(`"${'x'.repeat(size - 2)}"`));
  const nested = decodeCost(bytes(`${'['.repeat(size / 2)}${']'.repeat(size / 2)}`));
  const members = decodeCost(
    bytes(
      `{${Array.from({ length: size / 8 }, (_, i) => `"${i.toString(36).padStart(4, '0')}":1`).join(',')}}`,
    ),
  );
  const jsonInText = decodeCost(bytes(JSON.stringify(`${'['.repeat(size / 4)}${']'.repeat(size / 4)}`)));
  assert.ok(text >= 4 * size && text < 5 * size, `text ${text}`);
  assert.ok(nested > 30 * size, `nested ${nested}`);
  assert.ok(members > 20 * size, `members ${members}`);
  assert.ok(jsonInText < 5 * size, `structure inside a string is text: ${jsonInText}`);
});

test('property: the scan gives exactly the byte-by-byte estimate, escapes and unclosed strings included', () => {
  const token = fc.constantFrom(
    '{',
    '}',
    '[',
    ']',
    ':',
    ',',
    '"',
    '\\',
    '\\"',
    '\\\\',
    'x',
    '"short"',
    `"${'y'.repeat(40)}"`,
    `"${'y'.repeat(40)}\\"${'y'.repeat(40)}"`,
    `"${'\\"'.repeat(50)}"`,
    `"${'\\\\'.repeat(30)}"`,
  );
  fc.assert(
    fc.property(fc.array(token, { maxLength: 400 }), fc.boolean(), (tokens, padFirst) => {
      const pad = 'z'.repeat(UNSCANNED_BYTES + 1);
      const body = bytes(padFirst ? pad + tokens.join('') : tokens.join('') + pad);
      assert.equal(decodeCost(body), reference(body));
    }),
    { numRuns: 500, seed: 12 },
  );
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
