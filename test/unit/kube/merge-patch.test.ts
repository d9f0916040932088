import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { replacingPatch } from '../../../src/kube/merge-patch.js';

describe('replacingPatch', () => {
  test('fields gone from the object are sent as null, the others as they are', () => {
    assert.deepEqual(
      replacingPatch({ state: 'Ready', rolloutWave: 'canary', refusal: 'x' }, { state: 'Ready' }),
      { state: 'Ready', rolloutWave: null, refusal: null },
    );
  });

  test('a field held as undefined is gone as well (JSON would drop it and the server keep it)', () => {
    const patch = replacingPatch({ state: 'Error', refusal: 'x' }, { state: 'Ready', refusal: undefined });
    assert.deepEqual(patch, { state: 'Ready', refusal: null });
    assert.equal(JSON.stringify(patch), '{"state":"Ready","refusal":null}');
  });

  test('nothing before: the object itself', () => {
    assert.deepEqual(replacingPatch(undefined, { a: 1 }), { a: 1 });
  });
});
