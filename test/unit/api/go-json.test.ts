import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseFirstJsonValue, pickFields, pickFieldTree } from '../../../src/api/go-json.js';

describe('parseFirstJsonValue (json.Decoder.Decode)', () => {
  test('one value: exactly JSON.parse', () => {
    assert.deepEqual(parseFirstJsonValue(' {"a": [1, "}"]} \n'), { value: { a: [1, '}'] }, trailing: false });
  });

  test('the first object or array counts; what follows is ignored and reported', () => {
    assert.deepEqual(parseFirstJsonValue('{"a":1} {"a":2}'), { value: { a: 1 }, trailing: true });
    assert.deepEqual(parseFirstJsonValue('[1,[2]]]'), { value: [1, [2]], trailing: true });
    assert.deepEqual(parseFirstJsonValue('{"s":"a\\"}b"}x'), { value: { s: 'a"}b' }, trailing: true });
  });

  test('an invalid first value, or no closing bracket, throws the SyntaxError', () => {
    for (const text of ['', '{', '{"a":}', '{"a" 1} {}', 'nope {}', '1 2']) {
      assert.throws(() => parseFirstJsonValue(text), SyntaxError, text);
    }
  });
});

describe('pickFields (Go struct field matching)', () => {
  test('exact, then case-insensitive; unknown keys left out', () => {
    const { picked, folded } = pickFields({ overrides: 1, NAME: 2, other: 3 }, ['overrides', 'name']);
    assert.deepEqual(picked, { overrides: 1, name: 2 });
    assert.deepEqual(folded, [{ key: 'NAME', field: 'name' }]);
  });

  test('document order: the later spelling wins', () => {
    assert.deepEqual(pickFields({ Name: 1, name: 2 }, ['name']).picked, { name: 2 });
    assert.deepEqual(pickFields({ name: 1, NAME: 2 }, ['name']).picked, { name: 2 });
  });

  test('Unicode simple folding as Go: the Kelvin sign is k, the long s is s', () => {
    assert.deepEqual(pickFields({ '\u212Aey': 1 }, ['key']).picked, { key: 1 });
    assert.deepEqual(pickFields({ '\u017Fet': 1 }, ['set']).picked, { set: 1 });
    assert.deepEqual(pickFields({ nam: 1, namee: 2 }, ['name']).picked, {});
  });

  test('keys that are Object member names are plain keys', () => {
    assert.deepEqual(
      pickFields(JSON.parse('{"__proto__": 1, "constructor": 2}') as Record<string, unknown>, ['name'])
        .picked,
      {},
    );
  });
});

describe('pickFieldTree', () => {
  test('descends into known object fields and reports folded keys with their path', () => {
    const tree = { a: null, b: { c: null } };
    const { value, folded } = pickFieldTree({ A: 1, B: { C: 2, x: 3 }, y: 4 }, tree);
    assert.deepEqual(value, { a: 1, b: { c: 2 } });
    assert.deepEqual(folded, [
      { path: ['A'], field: 'a' },
      { path: ['B'], field: 'b' },
      { path: ['b', 'C'], field: 'c' },
    ]);
  });

  test('non-objects are returned as they are', () => {
    assert.deepEqual(pickFieldTree([1], { a: null }), { value: [1], folded: [] });
    assert.deepEqual(pickFieldTree({ b: 'x' }, { b: { c: null } }).value, { b: 'x' });
  });
});
