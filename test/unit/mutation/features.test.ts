import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE as CTB,
  FEATURE_ADD_IMG_PULL_SECRET as PULL,
  FEATURE_ALL as ALL,
  FEATURE_ALTER_IMG_REGISTRY as IMG,
  FEATURE_SET_FIPS_MODE as FIPS,
  FEATURE_SET_LANDSCAPE as LAND,
  FEATURES,
  type Feature,
  type FeatureKey,
} from '../../../src/api/webhook-features.js';
import { selectFeatures } from '../../../src/mutation/features.js';

interface Row {
  readonly name: string;
  readonly available: readonly FeatureKey[];
  readonly namespaceFeatures?: Readonly<Record<string, readonly FeatureKey[]>>;
  readonly namespaceName?: string;
  readonly ns?: Readonly<Record<string, string>>;
  readonly pod?: Readonly<Record<string, string>>;
  readonly expected: readonly Feature[];
}

const rows: readonly Row[] = [
  { name: 'nothing says true', available: [ALL], expected: [] },
  { name: 'nothing available', available: [], pod: { [ALL]: 'true' }, ns: { [ALL]: 'true' }, expected: [] },
  // config namespaceFeatures
  {
    name: 'config default for the namespace',
    available: [ALL],
    namespaceFeatures: { team: [FIPS] },
    expected: [FIPS],
  },
  {
    name: 'config default `all`',
    available: [ALL],
    namespaceFeatures: { team: [ALL] },
    expected: [...FEATURES],
  },
  {
    name: 'config `all` is limited to what is available',
    available: [IMG, CTB],
    namespaceFeatures: { team: [ALL] },
    expected: [IMG, CTB],
  },
  {
    name: 'config default for another namespace',
    available: [ALL],
    namespaceFeatures: { other: [ALL] },
    expected: [],
  },
  {
    name: 'empty namespace name means "default"',
    available: [ALL],
    namespaceFeatures: { default: [PULL] },
    namespaceName: '',
    expected: [PULL],
  },
  // Namespace annotations
  { name: 'namespace annotation true', available: [ALL], ns: { [IMG]: 'true' }, expected: [IMG] },
  { name: 'namespace annotation `all`', available: [ALL], ns: { [ALL]: 'true' }, expected: [...FEATURES] },
  {
    name: 'namespace annotation not "true"',
    available: [ALL],
    ns: { [IMG]: 'True', [FIPS]: 'yes' },
    expected: [],
  },
  {
    name: 'namespace "false" does not cancel the config default',
    available: [ALL],
    namespaceFeatures: { team: [FIPS] },
    ns: { [FIPS]: 'false' },
    expected: [FIPS],
  },
  // Pod annotations
  { name: 'pod annotation true', available: [ALL], pod: { [CTB]: 'true' }, expected: [CTB] },
  { name: 'pod annotation `all`', available: [ALL], pod: { [ALL]: 'true' }, expected: [...FEATURES] },
  {
    name: 'pod annotation not in availableFeatures',
    available: [IMG],
    pod: { [FIPS]: 'true' },
    expected: [],
  },
  {
    name: 'the seed Pod (all four annotated, all four available)',
    available: [IMG, PULL, FIPS, CTB],
    pod: { [IMG]: 'true', [PULL]: 'true', [CTB]: 'true', [FIPS]: 'true' },
    expected: [IMG, PULL, FIPS, CTB],
  },
  // Pod opt-out
  {
    name: 'pod "false" opts out of a config default',
    available: [ALL],
    namespaceFeatures: { team: [ALL] },
    pod: { [FIPS]: 'false' },
    expected: [IMG, PULL, CTB, LAND],
  },
  {
    name: 'pod "false" opts out of a namespace annotation',
    available: [ALL],
    ns: { [IMG]: 'true', [PULL]: 'true' },
    pod: { [IMG]: 'false' },
    expected: [PULL],
  },
  {
    name: 'pod `all: "false"` opts out of everything',
    available: [ALL],
    namespaceFeatures: { team: [ALL] },
    ns: { [ALL]: 'true' },
    pod: { [ALL]: 'false' },
    expected: [],
  },
  {
    name: 'pod: the specific key beats `all` ("false" all, "true" one)',
    available: [ALL],
    namespaceFeatures: { team: [ALL] },
    pod: { [ALL]: 'false', [FIPS]: 'true' },
    expected: [FIPS],
  },
  {
    name: 'pod: the specific key beats `all` ("true" all, "false" one)',
    available: [ALL],
    pod: { [ALL]: 'true', [CTB]: 'false' },
    expected: [IMG, PULL, FIPS, LAND],
  },
  // A feature's own key with any value shadows `all` at its level (upstream's ExpandAnnotationAll).
  {
    name: 'namespace: own key with another value shadows `all` for that feature',
    available: [ALL],
    ns: { [ALL]: 'true', [FIPS]: 'restart' },
    expected: [IMG, PULL, CTB, LAND],
  },
  {
    name: 'namespace: own key "false" shadows `all` but does not cancel the config default',
    available: [ALL],
    namespaceFeatures: { team: [IMG] },
    ns: { [ALL]: 'true', [IMG]: 'false' },
    expected: [IMG, PULL, FIPS, CTB, LAND],
  },
  {
    name: 'pod: own key with another value shadows `all: "true"`; other levels still count',
    available: [ALL],
    namespaceFeatures: { team: [CTB] },
    pod: { [ALL]: 'true', [CTB]: 'restart-on-change', [PULL]: 'x' },
    expected: [IMG, FIPS, CTB, LAND],
  },
  {
    name: 'pod: own key with another value shadows `all: "false"` (no opt-out for it)',
    available: [ALL],
    ns: { [FIPS]: 'true', [IMG]: 'true' },
    pod: { [ALL]: 'false', [FIPS]: 'maybe' },
    expected: [FIPS],
  },
  {
    name: 'set-landscape by its own annotation',
    available: [LAND],
    pod: { [LAND]: 'true' },
    expected: [LAND],
  },
  {
    name: 'pod value other than true/false falls through to the namespace',
    available: [ALL],
    ns: { [PULL]: 'true' },
    pod: { [PULL]: 'no', [IMG]: 'maybe' },
    expected: [PULL],
  },
  {
    name: 'sources add up',
    available: [ALL],
    namespaceFeatures: { team: [IMG] },
    ns: { [PULL]: 'true' },
    pod: { [CTB]: 'true' },
    expected: [IMG, PULL, CTB],
  },
  {
    name: 'unknown rt-cfg keys are ignored',
    available: [ALL],
    pod: { 'rt-cfg.kyma-project.io/set-something': 'true' },
    expected: [],
  },
  {
    name: 'namespace named like an Object member',
    available: [ALL],
    namespaceName: 'constructor',
    expected: [],
  },
];

describe('selectFeatures truth table', () => {
  for (const row of rows) {
    test(row.name, () => {
      const selected = selectFeatures({
        config: {
          availableFeatures: [...row.available],
          namespaceFeatures: mutable(row.namespaceFeatures ?? {}),
        },
        namespaceName: row.namespaceName ?? 'team',
        namespaceAnnotations: row.ns,
        podAnnotations: row.pod,
      });
      assert.deepEqual([...selected], row.expected);
    });
  }

  test('exhaustive: for every combination of sources, one feature follows the contract', () => {
    const values = [undefined, 'true', 'false', 'other'] as const;
    const annotate = (v: string | undefined, key: string): Record<string, string> =>
      v === undefined ? {} : { [key]: v };
    for (const available of [true, false]) {
      for (const inConfig of [true, false]) {
        for (const nsValue of values) {
          for (const nsAll of values) {
            for (const podValue of values) {
              for (const podAll of values) {
                const selected = selectFeatures({
                  config: {
                    availableFeatures: available ? [FIPS] : [IMG],
                    namespaceFeatures: inConfig ? { ns: [FIPS] } : {},
                  },
                  namespaceName: 'ns',
                  namespaceAnnotations: { ...annotate(nsValue, FIPS), ...annotate(nsAll, ALL) },
                  podAnnotations: { ...annotate(podValue, FIPS), ...annotate(podAll, ALL) },
                }).has(FIPS);
                // The own key, whatever its value, shadows `all` at its level.
                const podSays = podValue ?? podAll;
                const nsSays = nsValue ?? nsAll;
                const expected =
                  available && podSays !== 'false' && (podSays === 'true' || inConfig || nsSays === 'true');
                assert.equal(
                  selected,
                  expected,
                  JSON.stringify({ available, inConfig, nsValue, nsAll, podValue, podAll }),
                );
              }
            }
          }
        }
      }
    }
  });
});

function mutable(m: Readonly<Record<string, readonly FeatureKey[]>>): Record<string, FeatureKey[]> {
  return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, [...v]]));
}
