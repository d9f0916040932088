import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ManagedRef } from '../../../src/api/attestation.js';
import { KubeApiError } from '../../../src/kube/kube-errors.js';
import { attestableVersion, readVersions } from '../../../src/drift/managed-versions.js';

const refs: ManagedRef[] = Array.from({ length: 10 }, (_, i) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  namespace: 'kyma-system',
  name: `cm-${i}`,
}));
const never = new AbortController().signal;

describe('readVersions', () => {
  test('every ref in order, at most `concurrency` reads at once', async () => {
    let active = 0;
    let most = 0;
    const result = await readVersions(
      refs,
      async (ref) => {
        active++;
        most = Math.max(most, active);
        // Let the other workers start before this read ends.
        await new Promise((r) => setImmediate(r));
        active--;
        return `rv-${ref.name}`;
      },
      4,
      never,
    );
    assert.deepEqual(
      result,
      refs.map((r) => ({ ...r, resourceVersion: `rv-${r.name}` })),
    );
    assert.equal(most, 4);
  });

  test('absent, forbidden, failing and odd versions are attested as empty', async () => {
    const result = await readVersions(
      refs.slice(0, 5),
      (ref) => {
        switch (ref.name) {
          case 'cm-0':
            return Promise.reject(new KubeApiError('not found', { statusCode: 404 }));
          case 'cm-1':
            return Promise.reject(new KubeApiError('forbidden', { statusCode: 403 }));
          case 'cm-2':
            throw new Error('thrown at once');
          case 'cm-3':
            return Promise.resolve('has a space');
          default:
            return Promise.resolve('42');
        }
      },
      2,
      never,
    );
    assert.deepEqual(
      result.map((o) => o.resourceVersion),
      ['', '', '', '', '42'],
    );
  });

  test('an abort returns at once: finished reads kept, the others empty', async () => {
    const deadline = new AbortController();
    const result = readVersions(
      refs.slice(0, 3),
      (ref, signal) => {
        if (ref.name === 'cm-0') return Promise.resolve('1');
        assert.equal(signal, deadline.signal);
        if (ref.name === 'cm-1')
          setImmediate(() => {
            deadline.abort();
          });
        return new Promise<string>(() => undefined);
      },
      4,
      deadline.signal,
    );
    assert.deepEqual(
      (await result).map((o) => o.resourceVersion),
      ['1', '', ''],
    );
  });

  test('no refs: nothing read', async () => {
    assert.deepEqual(await readVersions([], () => Promise.reject(new Error('no')), 4, never), []);
  });
});

describe('attestableVersion', () => {
  test('what the listener accepts, else empty', () => {
    assert.equal(attestableVersion('123456'), '123456');
    assert.equal(attestableVersion('x'.repeat(64)), 'x'.repeat(64));
    assert.equal(attestableVersion('x'.repeat(65)), '');
    assert.equal(attestableVersion('a b'), '');
    assert.equal(attestableVersion(12), '');
    assert.equal(attestableVersion(undefined), '');
  });
});
