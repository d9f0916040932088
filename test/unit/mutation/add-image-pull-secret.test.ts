import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { addImagePullSecret } from '../../../src/mutation/add-image-pull-secret.js';
import type { LocalObjectReference, Pod } from '../../../src/mutation/pod.js';
import { edit } from './support.js';

const secretName = 'registry-credentials';

interface Case {
  readonly name: string;
  readonly pod: Pod;
  readonly available: boolean;
  readonly expected: readonly LocalObjectReference[] | undefined;
  readonly skipped?: 'secret-unavailable';
}

const cases: readonly Case[] = [
  {
    name: 'no imagePullSecrets: the list is added',
    pod: { spec: { containers: [{ name: 'a' }] } },
    available: true,
    expected: [{ name: secretName }],
  },
  {
    name: 'no spec at all: spec.imagePullSecrets is added',
    pod: {},
    available: true,
    expected: [{ name: secretName }],
  },
  {
    name: 'other references are kept, ours appended once',
    pod: { spec: { containers: [], imagePullSecrets: [{ name: 'a' }, { name: 'b' }] } },
    available: true,
    expected: [{ name: 'a' }, { name: 'b' }, { name: secretName }],
  },
  {
    name: 'already referenced: unchanged',
    pod: { spec: { containers: [], imagePullSecrets: [{ name: secretName }, { name: 'b' }] } },
    available: true,
    expected: [{ name: secretName }, { name: 'b' }],
  },
  {
    name: 'Secret unavailable: nothing added, reason given',
    pod: { spec: { containers: [], imagePullSecrets: [{ name: 'b' }] } },
    available: false,
    expected: [{ name: 'b' }],
    skipped: 'secret-unavailable',
  },
  {
    name: 'Secret unavailable but already referenced: unchanged, nothing to report',
    pod: { spec: { containers: [], imagePullSecrets: [{ name: secretName }] } },
    available: false,
    expected: [{ name: secretName }],
  },
];

describe('addImagePullSecret', () => {
  for (const c of cases) {
    test(c.name, () => {
      const { result, pod, patch } = edit(c.pod, (b) =>
        addImagePullSecret(b, { secretName, secretAvailable: c.available }),
      );
      assert.deepEqual(pod.spec?.imagePullSecrets, c.expected);
      assert.equal(result.changed, patch.length > 0);
      assert.ok(patch.length <= 1);
      assert.equal(result.skipped, c.skipped);
      assert.equal(result.warnings.length, c.skipped === undefined ? 0 : 1);
      if (c.skipped !== undefined)
        assert.match(result.warnings[0] ?? '', /"registry-credentials" is not available/);
    });
  }

  test('the patch appends with …/- when the list exists', () => {
    const { patch } = edit({ spec: { containers: [], imagePullSecrets: [{ name: 'a' }] } }, (b) =>
      addImagePullSecret(b, { secretName, secretAvailable: true }),
    );
    assert.deepEqual(patch, [{ op: 'add', path: '/spec/imagePullSecrets/-', value: { name: secretName } }]);
  });
});
