import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ensureEnv } from '../../../src/mutation/ensure-env.js';
import type { EnvVar, Pod } from '../../../src/mutation/pod.js';
import { edit } from './support.js';

const X = { name: 'X', value: 'on' } satisfies EnvVar;
const fromSecret: EnvVar = { name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'x' } } };

interface Case {
  readonly name: string;
  readonly env: EnvVar[] | undefined;
  readonly expected: EnvVar[];
  readonly ops: readonly string[];
}

const cases: readonly Case[] = [
  { name: 'no env: added', env: undefined, expected: [X], ops: ['add /spec/containers/0/env'] },
  { name: 'empty env: set', env: [], expected: [X], ops: ['replace /spec/containers/0/env'] },
  {
    name: 'other entries untouched, ours appended',
    env: [
      { name: 'A', value: '1' },
      { name: 'B', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ],
    expected: [
      { name: 'A', value: '1' },
      { name: 'B', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      X,
    ],
    ops: ['add /spec/containers/0/env/-'],
  },
  {
    name: 'already the value: unchanged',
    env: [{ name: 'A', value: '1' }, X],
    expected: [{ name: 'A', value: '1' }, X],
    ops: [],
  },
  {
    name: 'another value is replaced in place',
    env: [
      { name: 'X', value: 'off' },
      { name: 'A', value: '1' },
    ],
    expected: [X, { name: 'A', value: '1' }],
    ops: ['replace /spec/containers/0/env/0'],
  },
  {
    name: 'no value at all is replaced',
    env: [{ name: 'X' }],
    expected: [X],
    ops: ['replace /spec/containers/0/env/0'],
  },
  {
    name: 'valueFrom is replaced by the value',
    env: [{ name: 'A', value: '1' }, fromSecret],
    expected: [{ name: 'A', value: '1' }, X],
    ops: ['replace /spec/containers/0/env/1'],
  },
  {
    name: 'value and valueFrom together: replaced',
    env: [{ ...fromSecret, value: 'on' }],
    expected: [X],
    ops: ['replace /spec/containers/0/env/0'],
  },
  {
    name: 'duplicates collapse to the first entry, set to the value (never doubled)',
    env: [X, { name: 'A', value: '1' }, { name: 'X', value: 'off' }, fromSecret],
    expected: [X, { name: 'A', value: '1' }],
    ops: ['remove /spec/containers/0/env/3', 'remove /spec/containers/0/env/2'],
  },
  {
    name: 'a similar name is another variable',
    env: [
      { name: 'X_', value: 'off' },
      { name: 'x', value: 'off' },
    ],
    expected: [{ name: 'X_', value: 'off' }, { name: 'x', value: 'off' }, X],
    ops: ['add /spec/containers/0/env/-'],
  },
];

describe('ensureEnv: one variable', () => {
  for (const c of cases) {
    test(c.name, () => {
      const pod: Pod = {
        spec: { containers: [c.env === undefined ? { name: 'a' } : { name: 'a', env: c.env }] },
      };
      const { result, pod: out, patch } = edit(pod, (b) => ensureEnv(b, ['containers'], [X]));
      assert.deepEqual(out.spec?.containers[0]?.env, c.expected);
      assert.deepEqual(
        patch.map((op) => `${op.op} ${op.path}`),
        c.ops,
      );
      assert.equal(result, c.ops.length > 0);
    });
  }
});

describe('ensureEnv: several variables', () => {
  const Y = { name: 'Y', value: 'yes' } satisfies EnvVar;

  test('a container without env gets all of them in one operation, in order', () => {
    const { pod, patch } = edit({ spec: { containers: [{ name: 'a' }] } }, (b) =>
      ensureEnv(b, ['containers'], [X, Y]),
    );
    assert.deepEqual(pod.spec?.containers[0]?.env, [X, Y]);
    assert.equal(patch.length, 1);
  });

  test('each variable on its own: one present, one wrong, duplicates of both removed', () => {
    const env: EnvVar[] = [
      { name: 'Y', value: 'no' },
      X,
      { name: 'Y', value: 'yes' },
      { name: 'X', value: 'off' },
    ];
    const { pod } = edit({ spec: { containers: [{ name: 'a', env }] } }, (b) =>
      ensureEnv(b, ['containers'], [X, Y]),
    );
    assert.deepEqual(pod.spec?.containers[0]?.env, [Y, X]);
  });

  test('only the lists given are visited', () => {
    const input: Pod = { spec: { containers: [{ name: 'a' }], initContainers: [{ name: 'i' }] } };
    const { pod } = edit(input, (b) => ensureEnv(b, ['initContainers'], [X]));
    assert.equal(pod.spec?.containers[0]?.env, undefined);
    assert.deepEqual(pod.spec?.initContainers?.[0]?.env, [X]);
  });

  test('no spec or no containers: unchanged', () => {
    assert.equal(edit({}, (b) => ensureEnv(b, ['containers'], [X])).result, false);
    assert.equal(edit({ spec: { containers: [] } }, (b) => ensureEnv(b, ['containers'], [X])).result, false);
  });
});
