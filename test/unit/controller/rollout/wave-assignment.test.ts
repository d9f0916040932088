import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { assignWaves, hashPosition } from '../../../../src/controller/rollout/wave-assignment.js';
import { matchesSelector } from '../../../../src/controller/rollout/label-selector.js';

const ids = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `runtime-${i}` }));

describe('wave assignment', () => {
  test('1 % / 10 % / 100 % of the rest over 10,000 runtimes: about the shares asked', () => {
    const waves = [
      { name: 'one', percent: 1, soakMs: 0 },
      { name: 'ten', percent: 10, soakMs: 0 },
      { name: 'all', percent: 100, soakMs: 0 },
    ];
    const counts = [0, 0, 0, 0];
    for (const w of assignWaves(waves, ids(10_000)).values()) counts[w] = (counts[w] ?? 0) + 1;
    assert.ok(counts[0]! > 60 && counts[0]! < 140, `1 %: ${counts[0]}`);
    assert.ok(counts[1]! > 850 && counts[1]! < 1150, `10 % of the rest: ${counts[1]}`);
    assert.equal(counts[3], 0, 'nothing left for the implicit last wave');
    assert.equal(counts[0]! + counts[1]! + counts[2]!, 10_000);
  });

  test('shares are cumulative lines on one position: the first wave that holds it, after a selector wave too', () => {
    const waves = [
      { name: 'canary', selector: { matchLabels: { canary: 'true' } }, soakMs: 0 },
      { name: 'one', percent: 1, soakMs: 0 },
      { name: 'ten', percent: 10, soakMs: 0 },
      { name: 'all', percent: 100, soakMs: 0 },
    ];
    // The documented lines: 1 %, then 10 % of the rest (0.01 + 0.99 × 0.10), then everything.
    const lines = [0.01, 0.01 + 0.99 * 0.1, 1];
    const fleet = ids(10_000);
    const out = assignWaves(waves, fleet);
    for (const { id } of fleet) {
      const u = hashPosition(id);
      assert.equal(out.get(id), 1 + lines.findIndex((line) => u < line), `${id} at ${u}`);
    }
  });

  test('positions are the same in every release (a new controller must not reshuffle the waves)', () => {
    assert.equal(hashPosition('rt-1'), 0.7074672863818705);
    assert.equal(hashPosition('runtime-0'), 0.8217286232393235);
  });

  test('membership depends on the runtime alone: a bigger fleet moves nobody', () => {
    const waves = [{ name: 'ten', percent: 10, soakMs: 0 }];
    const small = assignWaves(waves, ids(100));
    const big = assignWaves(waves, [...ids(1_000)].reverse());
    for (const [id, w] of small) assert.equal(big.get(id), w, id);
  });

  test('a selector wave takes what it matches first; the implicit last wave takes the rest', () => {
    const waves = [{ name: 'canary', selector: { matchLabels: { canary: 'true' } }, soakMs: 0 }];
    const out = assignWaves(waves, [{ id: 'a', labels: { canary: 'true' } }, { id: 'b' }]);
    assert.equal(out.get('a'), 0);
    assert.equal(out.get('b'), 1);
  });

  test('hash positions are in [0, 1) and stable', () => {
    const u = hashPosition('rt-1');
    assert.ok(u >= 0 && u < 1);
    assert.equal(hashPosition('rt-1'), u);
    assert.notEqual(hashPosition('rt-2'), u);
  });

  test('label selectors: matchLabels and every matchExpressions operator', () => {
    const labels = { tier: 'canary', region: 'eu' };
    assert.ok(matchesSelector({}, labels));
    assert.ok(matchesSelector({ matchLabels: { tier: 'canary' } }, labels));
    assert.ok(!matchesSelector({ matchLabels: { tier: 'prod' } }, labels));
    assert.ok(
      matchesSelector(
        { matchExpressions: [{ key: 'region', operator: 'In', values: ['eu', 'us'] }] },
        labels,
      ),
    );
    assert.ok(
      !matchesSelector({ matchExpressions: [{ key: 'region', operator: 'NotIn', values: ['eu'] }] }, labels),
    );
    assert.ok(matchesSelector({ matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] }, labels));
    assert.ok(!matchesSelector({ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, labels));
  });
});
