import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { trustBundleHash } from '../../../../src/api/trust-stamp.js';
import { buildSyncSet } from '../../../../src/controller/direct/sync-set.js';
import {
  setBundleOf,
  TRUST_POLL_WINDOW_MS,
  trustLookDue,
  trustSummary,
} from '../../../../src/controller/direct/trust-restart-status.js';
import { syncSources } from '../../../support/fixtures.js';

const NOW = Date.parse('2026-11-24T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString();

describe("the runtime's trust-restart count on the KCP", () => {
  test('the report as the status holds it; a time the CRD would refuse is left out', () => {
    assert.equal(trustSummary(undefined), undefined);
    assert.deepEqual(
      trustSummary({
        bundle: 'abc',
        stalePods: 2,
        barePods: 1,
        optedOutPods: 3,
        at: '2026-11-24T10:00:00+02:00',
      }),
      { bundle: 'abc', stalePods: 2, barePods: 1, optedOutPods: 3, reportedAt: '2026-11-24T08:00:00.000Z' },
    );
    assert.deepEqual(trustSummary({ bundle: 'abc', stalePods: 0, at: 'soon' }), {
      bundle: 'abc',
      stalePods: 0,
      barePods: undefined,
      optedOutPods: undefined,
      reportedAt: undefined,
    });
  });

  test("the set's bundle named as the restarter names it", () => {
    const set = buildSyncSet(syncSources());
    assert.equal(setBundleOf(set), trustBundleHash('PEM').slice(0, 12));
    assert.equal(setBundleOf({ ok: false, reason: 'x' }), undefined);
  });

  test('looked at while the set’s bundle is not reported yet, or Pods are to be restarted, and news came lately', () => {
    const base = { setBundle: 'b', appliedAt: iso(NOW - 60_000), nowMs: NOW };
    const current = { bundle: 'b', stalePods: 0, reportedAt: iso(NOW - 60_000) };
    assert.equal(
      trustLookDue({ ...base, current: undefined }),
      false,
      'no restarter reported: the resync looks',
    );
    assert.equal(trustLookDue({ ...base, current }), false, 'at rest');
    assert.equal(trustLookDue({ ...base, current: { ...current, bundle: 'a' } }), true, 'a new bundle');
    assert.equal(
      trustLookDue({
        ...base,
        appliedAt: iso(NOW - TRUST_POLL_WINDOW_MS),
        current: { ...current, bundle: 'a' },
      }),
      false,
      'applied long ago and still not reported: left to the resync',
    );
    assert.equal(trustLookDue({ ...base, current: { ...current, stalePods: 3 } }), true);
    assert.equal(
      trustLookDue({ ...base, current: { ...current, stalePods: 3, barePods: 3 } }),
      false,
      'bare only',
    );
    assert.equal(
      trustLookDue({
        ...base,
        current: { ...current, stalePods: 3, reportedAt: iso(NOW - TRUST_POLL_WINDOW_MS) },
      }),
      false,
      'no news for long',
    );
  });
});
