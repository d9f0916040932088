import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { ConfigHolder } from '../../../src/webhook/config-holder.js';
import { createWebhookMetrics } from '../../../src/webhook/webhook-metrics.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { seedConfigText } from '../../support/fixtures.js';

const BAD = '{"overrides": 3}';

describe('rtb_webhook_config_refused: whether the latest text read was refused', () => {
  test('1 from a refusal until a good text (or the one in force) is read again, also when the bad one comes back', async () => {
    const metrics = createWebhookMetrics(new Registry());
    const refused = async (): Promise<number | undefined> =>
      (await metrics.configRefused.get()).values[0]?.value;
    const holder = new ConfigHolder(silentLogger(), metrics);
    assert.equal(await refused(), 0);
    holder.offer(BAD, 'test');
    assert.equal(await refused(), 1, 'refused with nothing in force');
    holder.offer(seedConfigText(), 'test');
    assert.equal(await refused(), 0);
    holder.offer(BAD, 'test');
    assert.equal(await refused(), 1, 'refused; the last good one stays');
    holder.offer(BAD, 'test');
    assert.equal(await refused(), 1, 'the same bad text again');
    holder.offer(seedConfigText(), 'test');
    assert.equal(await refused(), 0, 'the text in force read again');
    holder.offer(BAD, 'test');
    assert.equal(await refused(), 1, 'a remembered refusal read again after the good one');
  });
});
