import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setFipsMode } from '../../../src/mutation/set-fips-mode.js';
import type { EnvVar, Pod } from '../../../src/mutation/pod.js';
import { edit } from './support.js';

const FIPS: EnvVar = { name: 'KYMA_FIPS_MODE_ENABLED', value: 'true' };
const fromSecret: EnvVar = {
  name: 'KYMA_FIPS_MODE_ENABLED',
  valueFrom: { secretKeyRef: { name: 's', key: 'fips' } },
};

interface Case {
  readonly name: string;
  readonly env: EnvVar[] | undefined;
  readonly expected: EnvVar[];
  readonly ops: readonly string[];
}

const cases: readonly Case[] = [
  { name: 'no env: added', env: undefined, expected: [FIPS], ops: ['add /spec/containers/0/env'] },
  { name: 'empty env: appended', env: [], expected: [FIPS], ops: ['add /spec/containers/0/env/-'] },
  {
    name: 'other entries untouched, ours appended',
    env: [
      { name: 'A', value: '1' },
      { name: 'B', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ],
    expected: [
      { name: 'A', value: '1' },
      { name: 'B', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      FIPS,
    ],
    ops: ['add /spec/containers/0/env/-'],
  },
  {
    name: 'already "true": unchanged',
    env: [{ name: 'A', value: '1' }, FIPS],
    expected: [{ name: 'A', value: '1' }, FIPS],
    ops: [],
  },
  {
    name: '"false" is replaced in place',
    env: [
      { name: 'KYMA_FIPS_MODE_ENABLED', value: 'false' },
      { name: 'A', value: '1' },
    ],
    expected: [FIPS, { name: 'A', value: '1' }],
    ops: ['replace /spec/containers/0/env/0'],
  },
  {
    name: 'no value at all is replaced',
    env: [{ name: 'KYMA_FIPS_MODE_ENABLED' }],
    expected: [FIPS],
    ops: ['replace /spec/containers/0/env/0'],
  },
  {
    name: 'valueFrom is replaced by value "true"',
    env: [{ name: 'A', value: '1' }, fromSecret],
    expected: [{ name: 'A', value: '1' }, FIPS],
    ops: ['replace /spec/containers/0/env/1'],
  },
  {
    name: 'duplicates collapse to the first entry, set to "true"',
    env: [
      { name: 'KYMA_FIPS_MODE_ENABLED', value: 'true' },
      { name: 'A', value: '1' },
      { name: 'KYMA_FIPS_MODE_ENABLED', value: 'false' },
      fromSecret,
    ],
    expected: [FIPS, { name: 'A', value: '1' }],
    ops: ['remove /spec/containers/0/env/3', 'remove /spec/containers/0/env/2'],
  },
  {
    name: 'a similar name is another variable',
    env: [
      { name: 'KYMA_FIPS_MODE_ENABLED_X', value: 'false' },
      { name: 'kyma_fips_mode_enabled', value: 'false' },
    ],
    expected: [
      { name: 'KYMA_FIPS_MODE_ENABLED_X', value: 'false' },
      { name: 'kyma_fips_mode_enabled', value: 'false' },
      FIPS,
    ],
    ops: ['add /spec/containers/0/env/-'],
  },
];

describe('setFipsMode', () => {
  for (const c of cases) {
    test(c.name, () => {
      const pod: Pod = {
        spec: { containers: [c.env === undefined ? { name: 'a' } : { name: 'a', env: c.env }] },
      };
      const { result, pod: out, patch } = edit(pod, (b) => setFipsMode(b));
      assert.deepEqual(out.spec?.containers[0]?.env, c.expected);
      assert.deepEqual(
        patch.map((op) => `${op.op} ${op.path}`),
        c.ops,
      );
      assert.equal(result.changed, c.ops.length > 0);
      assert.deepEqual(result.warnings, []);
    });
  }

  test('every container and init container, not ephemeral containers', () => {
    const pod: Pod = {
      spec: {
        containers: [
          { name: 'a' },
          { name: 'b', env: [FIPS] },
          { name: 'c', env: [{ name: 'X', value: 'y' }] },
        ],
        initContainers: [{ name: 'i' }],
        ephemeralContainers: [{ name: 'e' }],
      },
    };
    const { pod: out } = edit(pod, (b) => setFipsMode(b));
    assert.deepEqual(
      out.spec?.containers.map((c) => c.env),
      [[FIPS], [FIPS], [{ name: 'X', value: 'y' }, FIPS]],
    );
    assert.deepEqual(out.spec.initContainers?.[0]!.env, [FIPS]);
    assert.equal(out.spec.ephemeralContainers?.[0]!.env, undefined);
  });

  test('no spec or no containers: unchanged', () => {
    assert.equal(edit({}, (b) => setFipsMode(b)).result.changed, false);
    assert.equal(edit({ spec: { containers: [] } }, (b) => setFipsMode(b)).result.changed, false);
  });
});
