import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  readTrustStatus,
  TRUST_STATUS_ANNOTATION,
  trustBundleChangedAt,
  trustBundleHash,
} from '../../../src/api/trust-stamp.js';
import { trustStatusValue } from '../../../src/runtime-agent/trust-restart/restart-status.js';

const HASH = trustBundleHash('-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n');

describe('the trust-bundle stamp and status', () => {
  test("upstream's value: SHA-256 hex of .spec.trustBundle", () => {
    const text = 'pem text';
    assert.equal(trustBundleHash(text), createHash('sha256').update(text).digest('hex'));
    assert.match(HASH, /^[0-9a-f]{64}$/);
  });

  test('the last content change: the latest managedFields entry owning spec.trustBundle, else creation', () => {
    const entry = (time: string, fields: unknown): { time: string; fieldsV1: unknown } => ({
      time,
      fieldsV1: fields,
    });
    const spec = { 'f:spec': { 'f:trustBundle': {} } };
    const meta = { 'f:metadata': { 'f:labels': {} } };
    assert.equal(
      trustBundleChangedAt({
        metadata: {
          creationTimestamp: '2026-01-01T00:00:00Z',
          managedFields: [
            entry('2026-01-02T00:00:00Z', spec),
            entry('2026-01-05T00:00:00Z', meta),
            entry('2026-01-03T00:00:00Z', spec),
          ],
        },
      }),
      Date.parse('2026-01-03T00:00:00Z'),
      'a later metadata-only write is no content change',
    );
    assert.equal(
      trustBundleChangedAt({ metadata: { creationTimestamp: '2026-01-01T00:00:00Z' } }),
      Date.parse('2026-01-01T00:00:00Z'),
    );
    assert.ok(Number.isNaN(trustBundleChangedAt({})));
  });

  test('the status for the KCP round-trips; anything else reads as none', () => {
    const at = new Date('2026-06-01T12:00:00Z');
    const value = trustStatusValue(HASH, { stalePods: 7, barePods: 1, optedOutPods: 2 }, at);
    assert.deepEqual(readTrustStatus({ [TRUST_STATUS_ANNOTATION]: value }), {
      bundle: HASH.slice(0, 12),
      stalePods: 7,
      barePods: 1,
      optedOutPods: 2,
      at: at.toISOString(),
    });
    assert.deepEqual(
      readTrustStatus({ [TRUST_STATUS_ANNOTATION]: '{"bundle":"x","stalePods":3,"at":"t","barePods":-1}' }),
      { bundle: 'x', stalePods: 3, barePods: undefined, optedOutPods: undefined, at: 't' },
      'an earlier release’s value (no separate counts) still reads; a bad count is left out',
    );
    for (const bad of [
      '',
      '{',
      '{"bundle":"x","stalePods":-1,"at":"t"}',
      '{"bundle":"x","stalePods":1.5,"at":"t"}',
      '[]',
      'null',
    ])
      assert.equal(readTrustStatus({ [TRUST_STATUS_ANNOTATION]: bad }), undefined, bad);
    assert.equal(readTrustStatus(undefined), undefined);
  });
});
