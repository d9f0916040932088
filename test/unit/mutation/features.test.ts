import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FEATURE_ALL as ALL,
  FEATURE_ALTER_IMG_REGISTRY as IMG,
  FEATURE_SET_FIPS_MODE as FIPS,
  type FeatureKey,
} from '../../../src/api/webhook-features.js';
import { selectFeatures } from '../../../src/mutation/features.js';
import { featureRows } from '../../support/mutation-cases.js';

describe('selectFeatures truth table', () => {
  for (const row of featureRows) {
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
