import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigHolder } from '../../../src/webhook/config-holder.js';
import { captureLogs } from '../../support/log-capture.js';

const LAND = 'rt-cfg.kyma-project.io/set-landscape';

describe('ConfigHolder: landscape and warnings', () => {
  test("the webhook's --landscape reaches the config in force", () => {
    const { logger } = captureLogs();
    const holder = new ConfigHolder(logger, undefined, 'NS2');
    const offer = holder.offer(JSON.stringify({ overrides: {}, availableFeatures: [LAND] }), 'test');
    assert.equal(offer.accepted, true);
    assert.equal(holder.get()?.landscape, 'NS2');
  });

  test('without a landscape, a config with set-landscape available is refused naming the field', () => {
    const { logger, lines } = captureLogs();
    const holder = new ConfigHolder(logger);
    const offer = holder.offer(JSON.stringify({ overrides: {}, availableFeatures: [LAND] }), 'test');
    assert.equal(offer.accepted, false);
    assert.equal(holder.get(), undefined);
    const refused = lines().find(
      (l) => l.msg === 'configuration refused; the last good configuration stays in force',
    );
    assert.deepEqual(
      (refused?.issues as { path: string }[]).map((i) => i.path),
      ['availableFeatures[0]'],
    );
  });

  test('warnings are logged once per accepted content, each naming its field', () => {
    const { logger, lines } = captureLogs();
    const holder = new ConfigHolder(logger);
    const text = JSON.stringify({ overrides: { nodot: 'ghcr.io' }, availableFeatures: [] });
    const first = holder.offer(text, 'test');
    assert.ok(first.accepted);
    assert.deepEqual(
      first.warnings.map((w) => w.path),
      ['availableFeatures', 'overrides.nodot'],
    );
    holder.offer(text, 'test');
    const warned = lines().filter((l) => l.level === 'warn');
    assert.deepEqual(
      warned.map((l) => l.field),
      ['availableFeatures', 'overrides.nodot'],
    );
    assert.ok(warned.every((l) => typeof l.msg === 'string' && l.msg.startsWith('configuration: ')));
  });
});
