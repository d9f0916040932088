import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EnvVar, Pod } from '../../../src/mutation/pod.js';
import { setLandscape } from '../../../src/mutation/set-landscape.js';
import { edit } from './support.js';

const NS2: EnvVar = { name: 'KYMA_LANDSCAPE', value: 'NS2' };

describe('setLandscape', () => {
  test('adds KYMA_LANDSCAPE to every container and init container, not ephemeral ones', () => {
    const pod: Pod = {
      spec: {
        initContainers: [{ name: 'init', image: 'busybox' }],
        containers: [{ name: 'main', image: 'nginx', env: [{ name: 'A', value: '1' }] }],
        ephemeralContainers: [{ name: 'e' }],
      },
    };
    const { result, pod: out } = edit(pod, (b) => setLandscape(b, { landscape: 'NS2' }));
    assert.deepEqual(result, { changed: true, warnings: [] });
    assert.deepEqual(out.spec?.initContainers?.[0]?.env, [NS2]);
    assert.deepEqual(out.spec.containers[0]?.env, [{ name: 'A', value: '1' }, NS2]);
    assert.equal(out.spec.ephemeralContainers?.[0]?.env, undefined);
  });

  test('the same value: unchanged; another value or valueFrom: replaced, never doubled', () => {
    const same = edit({ spec: { containers: [{ name: 'a', env: [NS2] }] } }, (b) =>
      setLandscape(b, { landscape: 'NS2' }),
    );
    assert.equal(same.result.changed, false);
    const env: EnvVar[] = [
      { name: 'KYMA_LANDSCAPE', value: 'OLD' },
      { name: 'KYMA_LANDSCAPE', valueFrom: { configMapKeyRef: { name: 'c', key: 'l' } } },
    ];
    const other = edit({ spec: { containers: [{ name: 'a', env }] } }, (b) =>
      setLandscape(b, { landscape: 'NS2' }),
    );
    assert.deepEqual(other.pod.spec?.containers[0]?.env, [NS2]);
    const from = edit({ spec: { containers: [{ name: 'a', env: [env[1]!] }] } }, (b) =>
      setLandscape(b, { landscape: 'NS2' }),
    );
    assert.deepEqual(from.pod.spec?.containers[0]?.env, [NS2]);
  });
});
