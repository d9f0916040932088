import assert from 'node:assert/strict';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { ConfigHolder } from '../../../src/webhook/config-holder.js';
import { FileConfigSource } from '../../../src/webhook/file-config-source.js';
import { createWebhookMetrics } from '../../../src/webhook/webhook-metrics.js';
import { seedConfigText } from '../../support/fixtures.js';
import { captureLogs } from '../../support/log-capture.js';

const BAD_A = '{"availableFeatures":["rt-cfg.kyma-project.io/nope"]}';
const BAD_B = '{"overrides": 3}';
const REFUSED = 'configuration refused; the last good configuration stays in force';

function setup(): {
  holder: ConfigHolder;
  reloads: (result: 'success' | 'failure') => Promise<number>;
  refusals: () => number;
  logger: ReturnType<typeof captureLogs>['logger'];
} {
  const registry = new Registry();
  const metrics = createWebhookMetrics(registry);
  const logs = captureLogs();
  const holder = new ConfigHolder(logs.logger, metrics);
  return {
    holder,
    logger: logs.logger,
    reloads: async (result) =>
      (await metrics.configReloads.get()).values.find((v) => v.labels.result === result)?.value ?? 0,
    refusals: () => logs.lines().filter((l) => l.msg === REFUSED).length,
  };
}

describe('config refusals are counted once per content', () => {
  test('the same bad text offered again and again counts and logs once', async () => {
    const s = setup();
    assert.equal(s.holder.offer(seedConfigText(), 'test').accepted, true);
    for (let i = 0; i < 5; i++) {
      const offer = s.holder.offer(BAD_A, 'test');
      assert.equal(offer.accepted, false, 'refused every time');
    }
    assert.equal(await s.reloads('failure'), 1);
    assert.equal(s.refusals(), 1);
    assert.equal(await s.reloads('success'), 1);
    assert.equal(s.holder.get()?.overrides['replace.me'], 'ghcr.io', 'the last good one stays');
  });

  test('each distinct bad text counts once, also when they alternate', async () => {
    const s = setup();
    for (const text of [BAD_A, BAD_B, BAD_A, BAD_B, BAD_A]) s.holder.offer(text, 'test');
    assert.equal(await s.reloads('failure'), 2);
    assert.equal(s.refusals(), 2);
  });

  test('a bad text that comes back after a good one was taken counts again (a new attempt)', async () => {
    const s = setup();
    s.holder.offer(BAD_A, 'test');
    s.holder.offer(seedConfigText(), 'test');
    s.holder.offer(BAD_A, 'test');
    assert.equal(await s.reloads('failure'), 2);
  });

  test('the refusal returned for a repeated text is the same, naming the offending field', () => {
    const s = setup();
    const first = s.holder.offer(BAD_A, 'test');
    const again = s.holder.offer(BAD_A, 'test');
    assert.equal(first.accepted, false);
    assert.equal(again.accepted, false);
    assert.equal(again.error, first.error);
    assert.ok(first.error.issues.some((i) => i.path.includes('availableFeatures')));
  });

  test('memory of refusals is bounded: after many other bad texts an old one counts again', async () => {
    const s = setup();
    s.holder.offer(BAD_A, 'test');
    for (let i = 0; i < 40; i++) s.holder.offer(`{"overrides": ${i}}`, 'test');
    const before = await s.reloads('failure');
    s.holder.offer(BAD_A, 'test');
    assert.equal(await s.reloads('failure'), before + 1);
  });

  test('a config file re-read many times (watch events, polls) with bad content counts once', async () => {
    const s = setup();
    const dir = await mkdtemp(join(tmpdir(), 'rtb-config-'));
    // Replaced whole, as the kubelet swaps a mounted ConfigMap: an in-place write lets the folder
    // watch read the file truncated, a third distinct text.
    const replace = async (file: string, text: string): Promise<void> => {
      await writeFile(`${file}.next`, text);
      await rename(`${file}.next`, file);
    };
    try {
      const file = join(dir, 'config.json');
      await writeFile(file, seedConfigText());
      const source = new FileConfigSource(file, s.holder, s.logger, 60_000);
      await source.start();
      try {
        await replace(file, BAD_A);
        for (let i = 0; i < 6; i++) await source.reload();
        assert.equal(await s.reloads('failure'), 1);
        assert.equal(s.refusals(), 1);
        await replace(file, BAD_B);
        for (let i = 0; i < 3; i++) await source.reload();
        assert.equal(await s.reloads('failure'), 2);
      } finally {
        source.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
