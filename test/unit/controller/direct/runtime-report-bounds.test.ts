import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  readTrustStatus,
  TRUST_STATUS_ANNOTATION,
  TRUST_STATUS_MAX_CHARS,
} from '../../../../src/api/trust-stamp.js';
import { readReport, REPORT_MAX_BYTES } from '../../../../src/api/webhook-status.js';
import { writePreflight, writeWorkloads } from '../../../../src/api/workload-health.js';
import { StatusBuilder } from '../../../../src/controller/direct/status-builder.js';
import { trustSummary } from '../../../../src/controller/direct/trust-restart-status.js';
import {
  recordReportRefusal,
  REFUSAL_MAX_CHARS,
  REPORTED_VERSION_MAX_CHARS,
  reportForStatus,
} from '../../../../src/controller/direct/webhook-report.js';

const revision = (pods: number) => ({ pods, started: 0, failing: 0, failedPods: 0, samples: [] });
const preflight = (checked: number) => ({
  version: 'v1',
  phase: 'done' as const,
  checked,
  skipped: 0,
  missing: 0,
  refused: 0,
  unreachable: 0,
  samples: [],
  startedAt: '2026-01-01T00:00:00Z',
});

describe("a runtime's reports go into the KCP's status bounded", () => {
  test("the webhook's report: a refusal cut to the CRD's length, a version no set has left out", () => {
    const huge = 'x'.repeat(1 << 20);
    const bounded = reportForStatus({ loadedVersion: huge, refusedVersion: 'v1', refusal: huge });
    assert.equal(bounded.servedVersion, undefined);
    assert.equal(bounded.refusedVersion, 'v1');
    assert.equal(bounded.refusal?.length, REFUSAL_MAX_CHARS);
    const ok = 'a'.repeat(REPORTED_VERSION_MAX_CHARS);
    // Undefined fields are cleared by the status patch (null), as fields left out were.
    assert.deepEqual(reportForStatus({ loadedVersion: ok }), {
      servedVersion: ok,
      refusedVersion: undefined,
      refusal: undefined,
    });
    assert.deepEqual(reportForStatus({}), {
      servedVersion: undefined,
      refusedVersion: undefined,
      refusal: undefined,
    });
  });

  test("the restarter's report: a bundle stamp longer than the CRD takes is no report", () => {
    const at = '2026-01-01T00:00:00Z';
    assert.equal(trustSummary({ bundle: 'b'.repeat(65), stalePods: 1, at }), undefined);
    assert.equal(trustSummary({ bundle: 'abcdef012345', stalePods: 1, at })?.bundle, 'abcdef012345');
  });

  test("the webhook's report over its size is refused before anything of it is parsed", (t) => {
    const parse = t.mock.method(JSON, 'parse');
    const huge = 'x'.repeat(REPORT_MAX_BYTES);
    const report = readReport({ data: { loadedVersion: 'v1', workloads: huge } });
    assert.equal(parse.mock.callCount(), 0, 'nothing parsed');
    assert.deepEqual(Object.keys(report), ['refused']);
    assert.ok(report.refused);
    assert.equal(report.refused.reason, 'TooLarge');
    assert.match(report.refused.message, new RegExp(`holds ${REPORT_MAX_BYTES + 2} bytes`));
    // Bytes, not characters: 'é' is two.
    const half = 'é'.repeat(REPORT_MAX_BYTES / 2);
    assert.equal(readReport({ data: { refusal: half } }).refused, undefined, 'exactly the bound');
    assert.equal(readReport({ data: { refusal: `${half}é` } }).refused?.reason, 'TooLarge');
    // Keys the KCP does not read do not count.
    assert.equal(readReport({ data: { revisionRules: huge, loadedVersion: 'v1' } }).loadedVersion, 'v1');
  });

  test("the webhook's report: counts past the CRD's 64-bit integers (or JS's exact ones) are left out, the key named", () => {
    const good = readReport({
      data: {
        workloads: writeWorkloads({ v1: revision(2 ** 53 - 1) }),
        preflight: writePreflight(preflight(3)),
      },
    });
    assert.equal(good.refused, undefined);
    assert.equal(good.workloads?.v1?.pods, 2 ** 53 - 1);
    for (const n of ['9007199254740992', '1e20', '18446744073709551616', '1.5', '-1']) {
      const r = readReport({
        data: {
          loadedVersion: 'v1',
          workloads: `{"v1":{"pods":${n},"started":0,"failing":0,"failedPods":0,"samples":[]}}`,
          preflight: JSON.stringify(preflight(1)).replace('"checked":1', `"checked":${n}`),
        },
      });
      assert.equal(r.workloads, undefined, n);
      assert.equal(r.preflight, undefined, n);
      assert.equal(r.loadedVersion, 'v1', 'the rest is read');
      assert.deepEqual(r.refused, {
        reason: 'OutOfBounds',
        message:
          "the webhook's status report: workloads, preflight not read (malformed, or a value out of bounds)",
      });
    }
  });

  test('condition WebhookReport: False with the reason while refused, gone once read', () => {
    const status = new StatusBuilder(
      { metadata: { name: 'rt-1', namespace: 'kcp-system' }, spec: { runtimeID: 'rt-1' } },
      new Date('2026-01-01T00:00:00Z'),
    );
    recordReportRefusal(status, readReport({ data: { workloads: 'x'.repeat(REPORT_MAX_BYTES + 1) } }));
    assert.equal(status.get('WebhookReport')?.status, 'False');
    assert.equal(status.get('WebhookReport')?.reason, 'TooLarge');
    recordReportRefusal(status, readReport({ data: {} }));
    assert.equal(status.get('WebhookReport'), undefined);
  });

  test("the restarter's count: past JS's exact integers (the CRD's int64) it is no report; an annotation too long is not parsed", (t) => {
    const at = '2026-01-01T00:00:00Z';
    const annotation = (v: string) => ({ [TRUST_STATUS_ANNOTATION]: v });
    const read = (stalePods: string) =>
      readTrustStatus(annotation(`{"bundle":"abcdef012345","stalePods":${stalePods},"at":"${at}"}`));
    assert.equal(read('3')?.stalePods, 3);
    assert.equal(read(String(2 ** 53 - 1))?.stalePods, 2 ** 53 - 1);
    for (const n of ['9007199254740992', '1e20', '-1', '0.5']) assert.equal(read(n), undefined, n);
    const bare = readTrustStatus(
      annotation(`{"bundle":"abcdef012345","stalePods":1,"barePods":1e20,"optedOutPods":1e300,"at":"${at}"}`),
    );
    assert.deepEqual(bare, {
      bundle: 'abcdef012345',
      stalePods: 1,
      barePods: undefined,
      optedOutPods: undefined,
      at,
    });
    const parse = t.mock.method(JSON, 'parse');
    assert.equal(
      readTrustStatus(
        annotation(`{"bundle":"b","stalePods":1,"at":"${'x'.repeat(TRUST_STATUS_MAX_CHARS)}"}`),
      ),
      undefined,
    );
    assert.equal(parse.mock.callCount(), 0);
  });
});
