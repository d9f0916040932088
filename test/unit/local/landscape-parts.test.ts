import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseWebhookConfig } from '../../../src/api/webhook-config.js';
import { localWebhookConfigText, SEED_IMAGE } from '../../../src/local/embedded-defaults.js';
import { seedRepositoryAndTag } from '../../../src/local/landscape-registries.js';
import { configWithTarget } from '../../../src/local/webhook-hosting.js';

test('the seed image splits into the repository and tag pushed to the local registries', () => {
  assert.equal(SEED_IMAGE, 'replace.me/kyma-project/rt-bootstrapper/pause:e2e');
  assert.deepEqual(seedRepositoryAndTag(), { repository: 'kyma-project/rt-bootstrapper/pause', tag: 'e2e' });
});

test('configWithTarget changes only where replace.me goes; the rest of the embedded default stays', () => {
  const base = parseWebhookConfig(localWebhookConfigText());
  const moved = parseWebhookConfig(configWithTarget('127.0.0.1:5000'));
  assert.deepEqual(moved.overrides, { ...base.overrides, 'replace.me': '127.0.0.1:5000' });
  assert.deepEqual({ ...moved, overrides: {} }, { ...base, overrides: {} });
});
