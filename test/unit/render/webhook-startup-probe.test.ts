import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { STARTUP_BUDGET_SECONDS } from '../../../src/render/hardening.js';
import { renderWebhookManifests } from '../../../src/render/webhook-manifests.js';

const container = renderWebhookManifests({ image: 'example.com/rtb:1.2.3' }).deployment.spec!.template.spec!
  .containers[0]!;

describe('webhook Deployment: a slow start is waited for, not restarted', () => {
  test('a startup probe on /healthz every second guards the liveness probe for the start budget', () => {
    const startup = container.startupProbe;
    assert.ok(startup, 'a startup probe');
    assert.deepEqual(
      [startup.httpGet?.path, startup.httpGet?.port, startup.httpGet?.scheme],
      ['/healthz', 'webhook-server', 'HTTPS'],
    );
    assert.equal(startup.periodSeconds, 1);
    assert.equal((startup.periodSeconds ?? 0) * (startup.failureThreshold ?? 0), STARTUP_BUDGET_SECONDS);
    // The liveness probe alone gave a start 3 failures 10 s apart: far less than a loaded node needs.
    const liveness = container.livenessProbe;
    assert.ok(
      (liveness?.periodSeconds ?? 10) * (liveness?.failureThreshold ?? 3) < STARTUP_BUDGET_SECONDS,
      'the budget is the startup probe, not the liveness probe',
    );
  });

  test('readiness and liveness as before, after the start', () => {
    const { readinessProbe: readiness, livenessProbe: liveness } = container;
    assert.deepEqual([readiness?.httpGet?.path, readiness?.periodSeconds], ['/readyz', 10]);
    assert.deepEqual([liveness?.httpGet?.path, liveness?.periodSeconds], ['/healthz', 10]);
  });
});
