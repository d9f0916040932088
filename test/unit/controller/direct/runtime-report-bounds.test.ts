import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { trustSummary } from '../../../../src/controller/direct/trust-restart-status.js';
import {
  REFUSAL_MAX_CHARS,
  REPORTED_VERSION_MAX_CHARS,
  reportForStatus,
} from '../../../../src/controller/direct/webhook-report.js';

describe("a runtime's reports go into the KCP's status bounded", () => {
  test("the webhook's report: a refusal cut to the CRD's length, a version no set has left out", () => {
    const huge = 'x'.repeat(1 << 20);
    const bounded = reportForStatus({ loadedVersion: huge, refusedVersion: 'v1', refusal: huge });
    assert.equal(bounded.servedVersion, undefined);
    assert.equal(bounded.refusedVersion, 'v1');
    assert.equal(bounded.refusal?.length, REFUSAL_MAX_CHARS);
    const ok = 'a'.repeat(REPORTED_VERSION_MAX_CHARS);
    assert.deepEqual(reportForStatus({ loadedVersion: ok }), { servedVersion: ok });
    assert.deepEqual(reportForStatus({}), {});
  });

  test("the restarter's report: a bundle stamp longer than the CRD takes is no report", () => {
    const at = '2026-01-01T00:00:00Z';
    assert.equal(trustSummary({ bundle: 'b'.repeat(65), stalePods: 1, at }), undefined);
    assert.equal(trustSummary({ bundle: 'abcdef012345', stalePods: 1, at })?.bundle, 'abcdef012345');
  });
});
