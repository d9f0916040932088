import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, parseWebhookConfig, readWebhookConfig } from '../../../src/api/webhook-config.js';
import { FEATURE_ALL } from '../../../src/api/webhook-features.js';
import { MAX_OVERRIDE_EXCLUSIONS } from '../../../src/image/override-exclusions.js';

const base = { overrides: { 'replace.me': 'ghcr.io' }, availableFeatures: [FEATURE_ALL], landscape: 'x' };

function issuesOf(input: unknown): { path: string; message: string }[] {
  try {
    parseWebhookConfig(input);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return [...error.issues];
  }
  assert.fail('config was accepted');
}

describe('overrideExclusions in the webhook config', () => {
  test('absent, null or empty: the config is as without the field (upstream configs unchanged)', () => {
    const without = readWebhookConfig(base);
    for (const value of [undefined, null, []]) {
      const read = readWebhookConfig({ ...base, overrideExclusions: value });
      assert.deepEqual(read, without, String(value));
      assert.equal('overrideExclusions' in read.config, false);
    }
  });

  test('kept as written (read case-insensitively as every field)', () => {
    const config = parseWebhookConfig({ ...base, OverrideExclusions: ['nginx', 'replace.me/keep:1'] });
    assert.deepEqual(config.overrideExclusions, ['nginx', 'replace.me/keep:1']);
  });

  test('a bad entry refuses the config, naming the entry', () => {
    assert.deepEqual(issuesOf({ ...base, overrideExclusions: ['nginx', 'ghcr.io', 'A/B', ''] }), [
      {
        path: 'overrideExclusions[1]',
        message:
          'invalid image reference "ghcr.io": reads as the Docker Hub image "docker.io/library/ghcr.io", ' +
          'not a registry; a registry is kept by giving it no override',
      },
      {
        path: 'overrideExclusions[2]',
        message: 'invalid image reference "A/B": repository must be lowercase, got "B"',
      },
      { path: 'overrideExclusions[3]', message: 'invalid image reference "": empty' },
    ]);
    assert.deepEqual(
      issuesOf({ ...base, overrideExclusions: ['bitnami/*', 'ghcr.io/*'] }).map((i) => i.path),
      ['overrideExclusions[1]'],
    );
  });

  test('wrong types are refused with the path', () => {
    assert.deepEqual(
      issuesOf({ ...base, overrideExclusions: 'nginx' }).map((i) => i.path),
      ['overrideExclusions'],
    );
    assert.deepEqual(
      issuesOf({ ...base, overrideExclusions: ['nginx', 3] }).map((i) => i.path),
      ['overrideExclusions[1]'],
    );
  });

  test('bounded: the count and each entry’s length', () => {
    const many = Array.from({ length: MAX_OVERRIDE_EXCLUSIONS }, (_, i) => `replace.me/x${i}`);
    assert.equal(parseWebhookConfig({ ...base, overrideExclusions: many }).overrideExclusions?.length, 64);
    const tooMany = issuesOf({ ...base, overrideExclusions: [...many, 'replace.me/one-more'] });
    assert.deepEqual(
      tooMany.map((i) => i.path),
      ['overrideExclusions'],
    );
    assert.match(tooMany[0]?.message ?? '', /64/);
    const long = issuesOf({ ...base, overrideExclusions: [`replace.me/${'a'.repeat(1100)}`] });
    assert.deepEqual(
      long.map((i) => i.path),
      ['overrideExclusions[0]'],
    );
    assert.match(long[0]?.message ?? '', /1024/);
  });
});
