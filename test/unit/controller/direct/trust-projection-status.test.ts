import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import type { WebhookStatusReport } from '../../../../src/api/webhook-status.js';
import { StatusBuilder } from '../../../../src/controller/direct/status-builder.js';
import {
  PROJECTION_REPORT_POLL_MS,
  PROJECTION_REPORT_WINDOW_MS,
  projectionLookDue,
} from '../../../../src/controller/direct/trust-projection-status.js';
import { observeTrustProjection } from '../../../../src/controller/direct/webhook-report.js';
import { keptTrustProjection } from '../../../support/trust-projection-condition.js';

const NOW = Date.parse('2026-11-27T12:00:00Z');

function builder(status: RuntimeBootstrapper['status']): StatusBuilder {
  return new StatusBuilder(
    { metadata: { name: 'rt', namespace: 'kcp-system', generation: 1 }, spec: { runtimeID: 'rt' }, status },
    new Date(NOW),
  );
}

const installed = (agoMs: number) => ({
  type: 'Installed' as const,
  status: 'True' as const,
  reason: 'Applied',
  message: '',
  lastTransitionTime: new Date(NOW - agoMs).toISOString(),
});

/** A Ready runtime, installed `agoMs` ago, with these more conditions. */
const ready = (agoMs: number, more: NonNullable<RuntimeBootstrapper['status']>['conditions'] = []) =>
  builder({ state: 'Ready', conditions: [installed(agoMs), ...more] });

/** A read that counts its calls. */
function reader(report: WebhookStatusReport): (() => Promise<WebhookStatusReport>) & { calls: number } {
  const read = () => {
    read.calls++;
    return Promise.resolve(report);
  };
  read.calls = 0;
  return read;
}

const pass = { hasBundle: true, thorough: false, nowMs: NOW };
const cond = (s: StatusBuilder) => s.get('TrustBundleProjection');

describe('the trust-bundle projection in the RuntimeBootstrapper status', () => {
  test('each finding becomes its condition', async () => {
    const cases: [WebhookStatusReport['trustBundle'], string, string][] = [
      [{ api: 'certificates.k8s.io/v1', projection: 'kept' }, 'True', 'Kept'],
      [{ api: 'certificates.k8s.io/v1beta1', projection: 'dropped' }, 'False', 'Dropped'],
      [{ api: 'none', projection: 'kept', detail: 'discovery found: …' }, 'False', 'NotServed'],
      [
        { api: 'certificates.k8s.io/v1', projection: 'unknown', detail: 'forbidden' },
        'Unknown',
        'ProbeFailed',
      ],
      [undefined, 'Unknown', 'NotReported'],
    ];
    for (const [finding, status, reason] of cases) {
      const s = ready(PROJECTION_REPORT_WINDOW_MS * 10);
      await observeTrustProjection(s, reader(finding ? { trustBundle: finding } : {}), pass);
      assert.equal(cond(s)?.status, status, reason);
      assert.equal(cond(s)?.reason, reason);
    }
  });

  test('a Dropped condition says what to do', async () => {
    const s = ready(0);
    await observeTrustProjection(
      s,
      reader({ trustBundle: { api: 'certificates.k8s.io/v1', projection: 'dropped' } }),
      pass,
    );
    assert.match(cond(s)?.message ?? '', /ClusterTrustBundleProjection off.*turn the gate on/);
  });

  test('at rest nothing is read; a forced or writing pass reads; no condition yet reads once', async () => {
    const kept = keptTrustProjection(new Date(NOW));
    const at = reader({ trustBundle: { api: 'certificates.k8s.io/v1', projection: 'dropped' } });
    await observeTrustProjection(ready(0, [kept]), at, pass);
    assert.equal(at.calls, 0, 'a runtime at rest costs nothing');
    const s = ready(0, [kept]);
    await observeTrustProjection(s, at, { ...pass, thorough: true });
    assert.equal(at.calls, 1);
    assert.equal(cond(s)?.reason, 'Dropped');
    const first = reader({});
    await observeTrustProjection(ready(PROJECTION_REPORT_WINDOW_MS * 10), first, pass);
    assert.equal(first.calls, 1);
  });

  test('not reported yet: looked at again soon after an install, not later', async () => {
    const early = ready(1_000);
    assert.deepEqual(await observeTrustProjection(early, reader({}), pass), {
      pollAfterMs: PROJECTION_REPORT_POLL_MS,
    });
    const late = ready(PROJECTION_REPORT_WINDOW_MS + 1);
    assert.deepEqual(await observeTrustProjection(late, reader({}), pass), {});
    // Still unreported, later on: the next pass does not read again.
    const again = reader({});
    await observeTrustProjection(
      builder({ state: 'Ready', conditions: [installed(PROJECTION_REPORT_WINDOW_MS + 1), cond(late)!] }),
      again,
      pass,
    );
    assert.equal(again.calls, 0);
  });

  test('not Ready: not looked at; no bundle in the set: the condition goes', async () => {
    assert.equal(
      projectionLookDue({
        ready: false,
        hasBundle: true,
        thorough: true,
        current: undefined,
        installedAtMs: NOW,
        nowMs: NOW,
      }),
      false,
    );
    const s = ready(0);
    await observeTrustProjection(s, reader({ trustBundle: { api: 'none', projection: 'kept' } }), pass);
    assert.ok(cond(s));
    await observeTrustProjection(s, reader({}), { ...pass, hasBundle: false });
    assert.equal(cond(s), undefined);
  });

  test('a failed read leaves the condition as it was', async () => {
    const s = ready(0);
    await observeTrustProjection(s, () => Promise.reject(new Error('unreachable')), pass);
    assert.equal(cond(s), undefined);
  });
});
