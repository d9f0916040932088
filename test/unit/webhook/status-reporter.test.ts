import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../../src/api/webhook-config.js';
import { readReport, reportData } from '../../../src/api/webhook-status.js';
import { nextReport } from '../../../src/webhook/status-reporter.js';

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
    const r = { loadedVersion: 's1', refusedVersion: 's2', refusal: 'x' };
    assert.deepEqual(readReport({ data: reportData(r) }), r);
    assert.deepEqual(readReport(undefined), {});
  });
});
