import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../../src/api/webhook-config.js';
import { readReport, reportData } from '../../../src/api/webhook-status.js';
import { encodeWatchEvent, parseWatchEvent } from '../../../src/drift/watch-event.js';
import { newFindingWritten, nextReport, reportWrittenEvent } from '../../../src/webhook/status-reporter.js';

const refusal = new ConfigError([{ path: 'availableFeatures[4]', message: 'no landscape is known' }]);

describe('webhook status report', () => {
  test('a refusal keeps the version served and says which fields', () => {
    const served = nextReport({}, 's1', { accepted: true });
    assert.deepEqual(served, { loadedVersion: 's1' });
    const refused = nextReport(served, 's2', { accepted: false, error: refusal });
    assert.deepEqual(refused, {
      loadedVersion: 's1',
      refusedVersion: 's2',
      refusal: 'availableFeatures[4]: no landscape is known',
    });
    assert.deepEqual(
      nextReport(refused, 's1', { accepted: true }),
      { loadedVersion: 's1' },
      'the rollback clears it',
    );
  });

  test('the report survives its ConfigMap round trip; no ConfigMap is an empty report', () => {
    // What the ConfigMap does not hold reads back as undefined.
    const none = {
      loadedVersion: undefined,
      refusedVersion: undefined,
      refusal: undefined,
      trustBundle: undefined,
      workloads: undefined,
      preflight: undefined,
      refused: undefined,
      escapedPods: undefined,
      registryCaches: undefined,
    };
    const r = { loadedVersion: 's1', refusedVersion: 's2', refusal: 'x' };
    assert.deepEqual(readReport({ data: reportData(r) }), { ...none, ...r });
    assert.deepEqual(readReport(undefined), none);
    const t = {
      loadedVersion: 's1',
      trustBundle: { api: 'certificates.k8s.io/v1', projection: 'dropped' as const, detail: 'why' },
    };
    assert.deepEqual(reportData(t), {
      loadedVersion: 's1',
      trustBundleAPI: 'certificates.k8s.io/v1',
      trustBundleProjection: 'dropped',
      trustBundleDetail: 'why',
    });
    // A member the ConfigMap does not hold reads back as undefined here too.
    assert.deepEqual(readReport({ data: reportData(t) }), {
      ...none,
      ...t,
      trustBundle: { ...t.trustBundle, kubelets: undefined },
    });
    // A projection value from the future is not read as a finding.
    assert.deepEqual(readReport({ data: { trustBundleAPI: 'x', trustBundleProjection: 'maybe' } }), none);
  });

  test('the trust-bundle finding stays through configurations taken and refused', () => {
    const trustBundle = { api: 'none', projection: 'unknown' as const };
    const taken = nextReport({ trustBundle }, 's1', { accepted: true });
    assert.deepEqual(taken, { loadedVersion: 's1', trustBundle });
    assert.deepEqual(nextReport(taken, 's2', { accepted: false, error: refusal }).trustBundle, trustBundle);
  });

  test('the KCP is told a write that carried a new trust-bundle finding, not one that kept it', () => {
    const kept = { api: 'certificates.k8s.io/v1', projection: 'kept' as const };
    const tooOld = { ...kept, kubelets: 'pool legacy (v1.34.4, 1 node)' };
    assert.equal(newFindingWritten(undefined, { loadedVersion: 's1' }), false, 'no finding yet');
    assert.equal(newFindingWritten(undefined, { trustBundle: kept }), true, "the process's first");
    assert.equal(newFindingWritten({ trustBundle: kept }, { loadedVersion: 's2', trustBundle: kept }), false);
    assert.equal(newFindingWritten({ trustBundle: kept }, { trustBundle: tooOld }), true, 'nodes too old');
    assert.equal(newFindingWritten({ trustBundle: tooOld }, { trustBundle: kept }), true, 'and gone');
  });

  test("the event names the report ConfigMap, and the listener's parser takes it", () => {
    const event = reportWrittenEvent({ namespace: 'kyma-system', name: 'rt-bootstrapper-webhook-status' });
    assert.deepEqual(parseWatchEvent(encodeWatchEvent(event)), {
      watched: { Namespace: 'kyma-system', Name: 'rt-bootstrapper-webhook-status' },
      watchedGvk: { group: '', version: 'v1', kind: 'ConfigMap' },
    });
  });
});
