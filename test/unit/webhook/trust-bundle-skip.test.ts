import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { parseWebhookConfig } from '../../../src/api/webhook-config.js';
import { MOUNT, trustBundleMount, type TrustBundleMount } from '../../../src/api/trust-bundle-capability.js';
import { LogRateLimit } from '../../../src/telemetry/log-rate-limit.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { handleAdmission, type AdmissionContext } from '../../../src/webhook/admission-handler.js';
import { createWebhookMetrics } from '../../../src/webhook/webhook-metrics.js';
import { seedConfigText, seedPodCreate } from '../../support/fixtures.js';

const config = parseWebhookConfig(JSON.parse(seedConfigText()));
const dropped = trustBundleMount({ api: 'certificates.k8s.io/v1beta1', projection: 'dropped' });

function context(mount: { current: TrustBundleMount }, registry: Registry): AdmissionContext {
  return {
    config: () => config,
    namespaceAnnotations: () => Promise.resolve({}),
    pullSecret: { ensure: () => Promise.resolve(true) },
    trustBundleMount: () => mount.current,
    metrics: createWebhookMetrics(registry),
    logger: silentLogger(),
    logLimit: new LogRateLimit(silentLogger()),
    failOpen: true,
  };
}

async function skipped(registry: Registry): Promise<Record<string, number>> {
  const text = await registry.metrics();
  return Object.fromEntries(
    [...text.matchAll(/^rtb_webhook_trust_bundle_skipped_total\{reason="([a-z_]+)"\} (\d+)$/gm)].map((m) => [
      m[1] ?? '',
      Number(m[2]),
    ]),
  );
}

describe('the admission answer where the runtime cannot take the trust-bundle mount', () => {
  test('no volume in the patch, the warning in the response, the skip counted for each Pod', async () => {
    const registry = new Registry();
    const mount = { current: dropped };
    const ctx = context(mount, registry);
    const handled = await handleAdmission(seedPodCreate('u1'), ctx);
    assert.equal(handled.result, 'mutated', 'the other features still apply');
    const { answer } = handled;
    assert.ok(!dropped.mount);
    assert.deepEqual(answer.warnings, [dropped.warning]);
    const paths = (answer.patch ?? []).map((op) => op.path);
    assert.ok(!paths.some((p) => p.includes('volume') || p.includes('ctb')), paths.join(' '));
    assert.deepEqual(await skipped(registry), { projection_dropped: 1 });
    await handleAdmission(seedPodCreate('u2'), ctx);
    assert.deepEqual(await skipped(registry), { projection_dropped: 2 });
  });

  test('once the finding changes, the next Pod gets the mount', async () => {
    const registry = new Registry();
    const mount = { current: dropped };
    const ctx = context(mount, registry);
    await handleAdmission(seedPodCreate('u1'), ctx);
    mount.current = MOUNT;
    const fresh = await handleAdmission(seedPodCreate('u3'), ctx);
    assert.ok((fresh.answer.patch ?? []).some((op) => op.path === '/spec/volumes'));
    assert.equal(fresh.answer.warnings, undefined);
  });
});
