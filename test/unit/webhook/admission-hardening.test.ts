import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { Registry } from 'prom-client';
import { parseWebhookConfig, type WebhookConfig } from '../../../src/api/webhook-config.js';
import { LogRateLimit } from '../../../src/telemetry/log-rate-limit.js';
import { handleAdmission, type AdmissionContext } from '../../../src/webhook/admission-handler.js';
import { decodeAdmissionReview, encodeAdmissionResponse } from '../../../src/webhook/admission-review.js';
import { createWebhookMetrics } from '../../../src/webhook/webhook-metrics.js';
import { seedConfigText } from '../../support/fixtures.js';
import { podReview } from '../../support/admission-review.js';
import { captureLogs } from '../../support/log-capture.js';

const seedConfig = parseWebhookConfig(JSON.parse(seedConfigText()));
const ALL = { 'rt-cfg.kyma-project.io/all': 'true' };

const review = (object: unknown, namespace = 'team', uid = 'u'): string =>
  podReview(object, { namespace, uid });

function context(config: WebhookConfig | undefined): {
  ctx: AdmissionContext;
  lines: () => Record<string, unknown>[];
  raw: string[];
} {
  const { logger, lines, raw } = captureLogs();
  const ctx: AdmissionContext = {
    config: () => config,
    namespaceAnnotations: () => Promise.resolve(ALL),
    pullSecret: { ensure: () => Promise.resolve(false) },
    metrics: createWebhookMetrics(new Registry()),
    logger,
    logLimit: new LogRateLimit(logger),
    failOpen: true,
  };
  return { ctx, lines, raw };
}

describe('admission: a Pod with spec null', () => {
  test('is allowed without a patch (no replace of /spec), with a warning', async () => {
    const { ctx } = context(seedConfig);
    for (const object of [
      { metadata: { name: 'p', annotations: ALL }, spec: null },
      { metadata: { name: 'p', annotations: ALL } },
    ]) {
      const handled = await handleAdmission(decodeAdmissionReview(review(object)), ctx);
      assert.equal(handled.result, 'unchanged');
      assert.equal(handled.answer.patch, undefined);
      const encoded = JSON.parse(encodeAdmissionResponse(handled.answer)) as {
        response: { allowed: boolean; patch?: string; warnings?: string[] };
      };
      assert.equal(encoded.response.allowed, true);
      assert.equal(encoded.response.patch, undefined);
      assert.match(encoded.response.warnings?.join('\n') ?? '', /no spec object/);
    }
  });
});

describe('admission: per-request log lines', () => {
  beforeEach(() => {
    mock.timers.enable({ apis: ['setTimeout'] });
  });
  afterEach(() => {
    mock.timers.reset();
  });

  test('a flood of requests writes a few short lines and then one count, whatever they carry', async () => {
    const { ctx, lines, raw } = context(undefined);
    const huge = 'n'.repeat(3 * 1024 * 1024);
    for (let i = 0; i < 200; i++) {
      const handled = await handleAdmission(
        // The envelope's names are bounded at decoding (ENVELOPE_LIMITS); the object's are not.
        decodeAdmissionReview(review({ metadata: { name: huge }, spec: {} }, 'team', `u${i}`)),
        ctx,
      );
      assert.equal(handled.result, 'unchanged');
    }
    assert.equal(raw.length, 5, 'the first five of a kind');
    for (const line of raw) assert.ok(line.length < 4096, `a line of ${line.length} characters`);
    mock.timers.tick(10_000);
    const summary = lines().filter((l) => l.suppressed !== undefined);
    assert.equal(summary.length, 1);
    assert.equal(summary[0]!.suppressed, 195);
    assert.equal(summary[0]!.kind, 'no configuration loaded yet; Pod admitted unchanged');
  });

  test('the pull-Secret and skipped-manipulation warnings are limited per kind too', async () => {
    const { ctx, lines } = context(seedConfig);
    for (let i = 0; i < 30; i++)
      await handleAdmission(
        decodeAdmissionReview(
          review({ metadata: { name: 'p', annotations: ALL }, spec: { containers: [] } }, 'team', `u${i}`),
        ),
        ctx,
      );
    const byMsg = new Map<string, number>();
    for (const l of lines()) byMsg.set(String(l.msg), (byMsg.get(String(l.msg)) ?? 0) + 1);
    assert.equal(byMsg.get('pull Secret not available; no imagePullSecrets reference added'), 5);
    assert.equal(byMsg.get('some manipulations were skipped'), 5);
  });
});
