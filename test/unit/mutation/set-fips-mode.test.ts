import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setFipsMode } from '../../../src/mutation/set-fips-mode.js';
import type { EnvVar, Pod } from '../../../src/mutation/pod.js';
import { edit } from './support.js';

// The variable-level rules (replace, deduplicate, valueFrom) are ensureEnv's, tested there.
const KYMA_FIPS: EnvVar = { name: 'KYMA_FIPS_MODE_ENABLED', value: 'true' };
const LEGACY_FIPS: EnvVar = { name: 'FIPS_MODE_ENABLED', value: 'true' };

describe('setFipsMode', () => {
  test('sets both KYMA_FIPS_MODE_ENABLED and the legacy FIPS_MODE_ENABLED, in that order', () => {
    const { result, pod, patch } = edit({ spec: { containers: [{ name: 'a' }] } }, (b) => setFipsMode(b));
    assert.deepEqual(pod.spec?.containers[0]?.env, [KYMA_FIPS, LEGACY_FIPS]);
    assert.deepEqual(
      patch.map((op) => `${op.op} ${op.path}`),
      ['add /spec/containers/0/env'],
    );
    assert.deepEqual(result, { changed: true, warnings: [] });
  });

  test('a Pod with one of them gets the other; "false" of either is replaced', () => {
    const env: EnvVar[] = [{ name: 'A', value: '1' }, KYMA_FIPS];
    assert.deepEqual(
      edit({ spec: { containers: [{ name: 'a', env }] } }, (b) => setFipsMode(b)).pod.spec?.containers[0]
        ?.env,
      [{ name: 'A', value: '1' }, KYMA_FIPS, LEGACY_FIPS],
    );
    const off: EnvVar[] = [
      { name: 'FIPS_MODE_ENABLED', value: 'false' },
      { name: 'KYMA_FIPS_MODE_ENABLED', value: 'false' },
    ];
    assert.deepEqual(
      edit({ spec: { containers: [{ name: 'a', env: off }] } }, (b) => setFipsMode(b)).pod.spec?.containers[0]
        ?.env,
      [LEGACY_FIPS, KYMA_FIPS],
    );
  });

  test('both already "true": unchanged', () => {
    const { result, patch } = edit(
      { spec: { containers: [{ name: 'a', env: [LEGACY_FIPS, KYMA_FIPS] }] } },
      (b) => setFipsMode(b),
    );
    assert.equal(result.changed, false);
    assert.deepEqual(patch, []);
  });

  test('every container and init container, not ephemeral containers', () => {
    const pod: Pod = {
      spec: {
        containers: [
          { name: 'a' },
          { name: 'b', env: [KYMA_FIPS] },
          { name: 'c', env: [{ name: 'X', value: 'y' }] },
        ],
        initContainers: [{ name: 'i' }],
        ephemeralContainers: [{ name: 'e' }],
      },
    };
    const { pod: out } = edit(pod, (b) => setFipsMode(b));
    assert.deepEqual(
      out.spec?.containers.map((c) => c.env),
      [
        [KYMA_FIPS, LEGACY_FIPS],
        [KYMA_FIPS, LEGACY_FIPS],
        [{ name: 'X', value: 'y' }, KYMA_FIPS, LEGACY_FIPS],
      ],
    );
    assert.deepEqual(out.spec.initContainers?.[0]!.env, [KYMA_FIPS, LEGACY_FIPS]);
    assert.equal(out.spec.ephemeralContainers?.[0]!.env, undefined);
  });

  test('no spec or no containers: unchanged', () => {
    assert.equal(edit({}, (b) => setFipsMode(b)).result.changed, false);
    assert.equal(edit({ spec: { containers: [] } }, (b) => setFipsMode(b)).result.changed, false);
  });
});
