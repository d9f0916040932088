import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ADMISSION_PATH_REPORT_MAX_CHARS,
  MAX_ADMISSION_REASON_CHARS,
  readAdmissionPath,
  writeAdmissionPath,
} from '../../../src/api/admission-path-report.js';

describe('the admission path in the status report', () => {
  test('round trip; the reason cut to its bound and to one line', () => {
    const report = { path: 'policy', api: 'admissionregistration.k8s.io/v1', installer: 'agent' } as const;
    assert.deepEqual(readAdmissionPath(writeAdmissionPath(report)), report);
    const long = writeAdmissionPath({
      path: 'webhook',
      api: 'none',
      installer: 'none',
      reason: `a\nb${'x'.repeat(2 * MAX_ADMISSION_REASON_CHARS)}`,
    });
    const reason = readAdmissionPath(long)?.reason ?? '';
    assert.equal(reason.length, MAX_ADMISSION_REASON_CHARS);
    assert.ok(!reason.includes('\n'));
  });

  test('a forged, malformed or oversized value is not read', () => {
    assert.equal(readAdmissionPath(undefined), undefined);
    assert.equal(readAdmissionPath('{'), undefined);
    assert.equal(readAdmissionPath('{"path":"policy","api":"x","installer":"someone"}'), undefined);
    const huge = JSON.stringify({
      path: 'policy',
      api: 'x',
      installer: 'agent',
      pad: ' '.repeat(ADMISSION_PATH_REPORT_MAX_CHARS),
    });
    assert.equal(readAdmissionPath(huge), undefined);
  });
});
