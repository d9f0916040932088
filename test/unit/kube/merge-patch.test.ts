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

  test('nothing before: the object itself', () => {
    assert.deepEqual(replacingPatch(undefined, { a: 1 }), { a: 1 });
  });
});
