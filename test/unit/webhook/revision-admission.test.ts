import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { applyPatch, type Operation } from 'rfc6902';
import { parseWebhookConfig } from '../../../src/api/webhook-config.js';
import { REVISION_ANNOTATION } from '../../../src/api/workload-health.js';
import type { Pod } from '../../../src/mutation/pod.js';
import { LogRateLimit } from '../../../src/telemetry/log-rate-limit.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { handleAdmission, type AdmissionContext } from '../../../src/webhook/admission-handler.js';
import { ConfigHolder } from '../../../src/webhook/config-holder.js';
import { createWebhookMetrics } from '../../../src/webhook/webhook-metrics.js';
import { seedConfigText, seedPodBefore, seedPodCreate } from '../../support/fixtures.js';

const config = parseWebhookConfig(JSON.parse(seedConfigText()));

function context(o: Pick<AdmissionContext, 'revision' | 'knownMissing'>): AdmissionContext {
  return {
    config: () => config,
    namespaceAnnotations: () => Promise.resolve({}),
    pullSecret: { ensure: () => Promise.resolve(true) },
    metrics: createWebhookMetrics(new Registry()),
    logger: silentLogger(),
    logLimit: new LogRateLimit(silentLogger()),
    failOpen: true,
    ...o,
  };
}

function patched(answerPatch: unknown): Pod {
  const pod: Pod = seedPodBefore();
  applyPatch(pod, answerPatch as Operation[]);
  return pod;
}

describe('admission under a set version', () => {
  test('the mutated Pod carries the revision in force', async () => {
    const { answer } = await handleAdmission(seedPodCreate(), context({ revision: () => 'abc123' }));
    assert.equal(patched(answer.patch).metadata?.annotations?.[REVISION_ANNOTATION], 'abc123');
  });

  test('an image rewritten to where the preflight found nothing gets a warning naming both images', async () => {
    const seen: string[] = [];
    const { answer } = await handleAdmission(
      seedPodCreate(),
      context({
        revision: () => 'abc123',
        knownMissing: (image) => {
          seen.push(image);
          return image.startsWith('ghcr.io/');
        },
      }),
    );
    const pod = patched(answer.patch);
    const image = pod.spec?.containers[0]?.image ?? '';
    assert.ok(image.startsWith('ghcr.io/'), image);
    assert.ok(seen.includes(image));
    const warning = (answer.warnings ?? []).find((w) => w.includes('did not serve'));
    assert.ok(warning, JSON.stringify(answer.warnings));
    assert.ok(warning.includes(image));
  });

  test('no warning where the preflight found the image', async () => {
    const { answer } = await handleAdmission(
      seedPodCreate(),
      context({ revision: () => 'abc123', knownMissing: () => false }),
    );
    assert.ok(!(answer.warnings ?? []).some((w) => w.includes('did not serve')));
  });
});

describe('the config holder’s revision', () => {
  test('follows the set version of the text in force, also when only the version changed', () => {
    const holder = new ConfigHolder(silentLogger());
    const text = seedConfigText();
    holder.offer(text, 'cm', 'v1');
    assert.equal(holder.revision, 'v1');
    holder.offer(text, 'cm', 'v2');
    assert.equal(holder.revision, 'v2', 'same text, new set: the new revision');
    holder.offer('{"overrides": 5}', 'cm', 'v3');
    assert.equal(holder.revision, 'v2', 'a refused text leaves the revision in force');
    holder.offer(text, 'file');
    assert.equal(holder.revision, undefined, 'a source without a version');
  });
});
