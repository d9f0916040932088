import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE as CTB,
  FEATURE_ALL as ALL,
  FEATURE_ALTER_IMG_REGISTRY as IMG,
  FEATURE_SET_FIPS_MODE as FIPS,
  FEATURE_SET_LANDSCAPE as LAND,
} from '../../../src/api/webhook-features.js';
import {
  ConfigError,
  readWebhookConfig,
  type ConfigIssue,
  type ReadWebhookConfigOptions,
} from '../../../src/api/webhook-config.js';

const ctb = { name: 'ctb', certWritePath: 'ca.pem' };

function warningsOf(input: unknown, options?: ReadWebhookConfigOptions): ConfigIssue[] {
  return [...readWebhookConfig(input, options).warnings];
}

function issuesOf(input: unknown, options?: ReadWebhookConfigOptions): readonly ConfigIssue[] {
  try {
    readWebhookConfig(input, options);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.issues;
  }
  assert.fail('config was accepted');
}

/** Accepted with exactly one warning at `path` whose message matches. */
const warned: readonly [name: string, input: unknown, path: string, message: RegExp][] = [
  [
    'availableFeatures absent',
    { overrides: {} },
    'availableFeatures',
    /absent or empty: no feature is applied/,
  ],
  ['availableFeatures null', { availableFeatures: null }, 'availableFeatures', /absent or empty/],
  ['availableFeatures empty', { availableFeatures: [] }, 'availableFeatures', /absent or empty/],
  [
    'override key without dot: kept, never used',
    { availableFeatures: [IMG], overrides: { nodot: 'ghcr.io' } },
    'overrides.nodot',
    /^key: never matches: .*; this override is never used$/,
  ],
  [
    'override key with a path',
    { availableFeatures: [IMG], overrides: { 'reg.io/x': 'ghcr.io' } },
    'overrides["reg.io/x"]',
    /^key: not a registry host/,
  ],
  [
    'override target host without dot (would send images to a Docker Hub namespace)',
    { availableFeatures: [IMG], overrides: { 'replace.me': 'ghcr' } },
    'overrides["replace.me"]',
    /^target host "ghcr": never matches/,
  ],
  [
    'override target with an uppercase path',
    { availableFeatures: [IMG], overrides: { 'replace.me': 'ghcr.io/Org' } },
    'overrides["replace.me"]',
    /^target path: repository must be lowercase/,
  ],
  [
    'override target null (Go reads it as "")',
    { availableFeatures: [IMG], overrides: { 'replace.me': null } },
    'overrides["replace.me"]',
    /^target host "": /,
  ],
  [
    'index.docker.io beside docker.io',
    { availableFeatures: [IMG], overrides: { 'index.docker.io': 'a.io', 'docker.io': 'b.io' } },
    'overrides["index.docker.io"]',
    /names Docker Hub as "docker.io" does/,
  ],
  [
    'namespace name that is no namespace: kept, never matches',
    { availableFeatures: [FIPS], namespaceFeatures: { Kyma_System: [FIPS] } },
    'namespaceFeatures.Kyma_System',
    /not a namespace name: never matches/,
  ],
  [
    'namespaceFeatures without a catalog (upstream: legacy, accepted)',
    { namespaceFeatures: { ns: [IMG] }, availableFeatures: [] },
    'namespaceFeatures',
    /has no effect while availableFeatures is empty/,
  ],
  [
    'trust-bundle feature available without the block',
    { availableFeatures: [CTB] },
    'clusterTrustBundle',
    /absent while "rt-cfg.kyma-project.io\/add-cluster-trust-bundle" is available: nothing is mounted/,
  ],
  [
    'trust-bundle block a Pod could not carry: dropped, nothing mounted',
    { availableFeatures: [CTB], clusterTrustBundle: { name: 'Bad Name', certWritePath: 'ca.pem' } },
    'clusterTrustBundle.name',
    /not a valid ClusterTrustBundle name; the trust bundle is not mounted/,
  ],
  [
    'resyncInterval that is not a Go duration: ignored',
    { availableFeatures: [CTB], clusterTrustBundle: { ...ctb, resyncInterval: '10' } },
    'clusterTrustBundle.resyncInterval',
    /time: missing unit in duration "10"; ignored/,
  ],
  [
    'resyncInterval not positive: ignored',
    { availableFeatures: [CTB], clusterTrustBundle: { ...ctb, resyncInterval: '-1s' } },
    'clusterTrustBundle.resyncInterval',
    /not a positive duration; ignored/,
  ],
  [
    'set-landscape available off a runtime (the KCP) without a landscape',
    { availableFeatures: [FIPS, LAND] },
    'availableFeatures[1]',
    /"rt-cfg.kyma-project.io\/set-landscape" is available but no landscape is known here: each webhook needs --landscape/,
  ],
];

describe('readWebhookConfig: accepted with a warning naming the field', () => {
  for (const [name, input, path, message] of warned) {
    test(name, () => {
      const warnings = warningsOf(input);
      const at = warnings.filter((w) => w.path === path);
      assert.equal(at.length, 1, JSON.stringify(warnings));
      assert.match(at[0]?.message ?? '', message);
      // Nothing else but, where the case has no catalog, the empty-catalog warning.
      assert.ok(
        warnings.every((w) => w.path === path || w.path === 'availableFeatures'),
        JSON.stringify(warnings),
      );
    });
  }

  test('kept as given: unusable overrides and namespace names stay in the parsed config', () => {
    const { config } = readWebhookConfig({
      availableFeatures: [IMG],
      overrides: { nodot: 'ghcr.io', 'replace.me': null },
      namespaceFeatures: { Kyma_System: [IMG], ns: null },
    });
    assert.deepEqual(config.overrides, { nodot: 'ghcr.io', 'replace.me': '' });
    assert.deepEqual(config.namespaceFeatures, { Kyma_System: [IMG], ns: [] });
  });

  test('an unusable trust-bundle block is dropped as a whole, every bad field named', () => {
    const { config, warnings } = readWebhookConfig({
      availableFeatures: [CTB],
      clusterTrustBundle: { name: 'c', certWritePath: '/abs', volumeName: 'Certs', volumeMountPath: 'rel' },
    });
    assert.equal(config.clusterTrustBundle, undefined);
    assert.deepEqual(
      warnings.map((w) => w.path),
      [
        'clusterTrustBundle.certWritePath',
        'clusterTrustBundle.volumeName',
        'clusterTrustBundle.volumeMountPath',
      ],
    );
  });

  test('resyncInterval: a Go duration string or nanoseconds, kept in milliseconds', () => {
    const ms = (resyncInterval: unknown): number | undefined =>
      readWebhookConfig({ clusterTrustBundle: { ...ctb, resyncInterval } }).config.clusterTrustBundle
        ?.resyncIntervalMs;
    assert.equal(ms('10s'), 10_000);
    assert.equal(ms('1m30s'), 90_000);
    assert.equal(ms('1.5h'), 5_400_000);
    assert.equal(ms(10_000_000_000), 10_000);
    assert.equal(ms(null), undefined);
    assert.equal(ms(undefined), undefined);
  });
});

describe('readWebhookConfig: the landscape', () => {
  const landscapeConfig = { availableFeatures: [IMG, LAND] };

  test('on a webhook, set-landscape available without any landscape refuses the config', () => {
    assert.deepEqual(issuesOf(landscapeConfig, { runtime: {} }), [
      {
        path: 'availableFeatures[1]',
        message:
          '"rt-cfg.kyma-project.io/set-landscape" is available but no landscape is known: start the webhook with --landscape or set "landscape"',
      },
    ]);
    assert.equal(
      issuesOf(landscapeConfig, { runtime: { landscape: '' } }).length,
      1,
      'an empty flag is no landscape',
    );
    assert.equal(issuesOf({ ...landscapeConfig, landscape: '' }, { runtime: {} }).length, 1);
  });

  test('`all` includes set-landscape: the issue names the `all` entry', () => {
    assert.deepEqual(
      issuesOf({ availableFeatures: [IMG, ALL], clusterTrustBundle: ctb }, { runtime: {} }).map(
        (i) => i.path,
      ),
      ['availableFeatures[1]'],
    );
  });

  test('the flag, the config field, or both (the flag wins, with a warning)', () => {
    assert.equal(
      readWebhookConfig(landscapeConfig, { runtime: { landscape: 'NS2' } }).config.landscape,
      'NS2',
    );
    assert.equal(
      readWebhookConfig({ ...landscapeConfig, landscape: 'CN' }, { runtime: {} }).config.landscape,
      'CN',
    );
    const both = readWebhookConfig(
      { ...landscapeConfig, landscape: 'CN' },
      { runtime: { landscape: 'NS2' } },
    );
    assert.equal(both.config.landscape, 'NS2');
    assert.deepEqual(both.warnings, [
      { path: 'landscape', message: '"CN" is overridden by --landscape "NS2"' },
    ]);
    const same = readWebhookConfig(
      { ...landscapeConfig, landscape: 'NS2' },
      { runtime: { landscape: 'NS2' } },
    );
    assert.deepEqual(same.warnings, []);
  });

  test('a landscape without the feature is kept and harmless', () => {
    const { config, warnings } = readWebhookConfig(
      { availableFeatures: [IMG] },
      { runtime: { landscape: 'NS2' } },
    );
    assert.equal(config.landscape, 'NS2');
    assert.deepEqual(warnings, []);
  });
});

describe('readWebhookConfig: read as Go reads JSON', () => {
  test('text after the first JSON value is ignored, with a warning', () => {
    const { config, warnings } = readWebhookConfig(
      '{"availableFeatures":["rt-cfg.kyma-project.io/set-fips-mode"]}\n{"x": 1} trailing',
    );
    assert.deepEqual(config.availableFeatures, [FIPS]);
    assert.deepEqual(warnings, [{ path: '(root)', message: 'text after the first JSON value is ignored' }]);
  });

  test('a broken first value is still invalid JSON', () => {
    assert.match(issuesOf('{"availableFeatures": [} {}')[0]?.message ?? '', /^invalid JSON: /);
    assert.match(issuesOf('')[0]?.message ?? '', /^invalid JSON: /);
  });

  test('field names match case-insensitively (also nested), each such key named in a warning', () => {
    const { config, warnings } = readWebhookConfig({
      AvailableFeatures: [CTB],
      OVERRIDES: { 'replace.me': 'ghcr.io' },
      clusterTrustBundle: { Name: 'ctb', certwritepath: 'ca.pem' },
      ImagePullSecret: { NAME: 'creds' },
    });
    assert.deepEqual(config.availableFeatures, [CTB]);
    assert.deepEqual(config.overrides, { 'replace.me': 'ghcr.io' });
    assert.equal(config.clusterTrustBundle?.name, 'ctb');
    assert.equal(config.clusterTrustBundle.certWritePath, 'ca.pem');
    assert.equal(config.imagePullSecret.name, 'creds');
    assert.deepEqual(
      warnings.map((w) => w.path),
      [
        'AvailableFeatures',
        'OVERRIDES',
        'ImagePullSecret',
        'clusterTrustBundle.Name',
        'clusterTrustBundle.certwritepath',
        'imagePullSecret.NAME',
      ],
    );
    assert.ok(
      warnings.every((w) => /^read as "\w+" \(field names match case-insensitively\)$/.test(w.message)),
    );
  });

  test('two spellings of one field: the later one wins, as in Go', () => {
    const config = readWebhookConfig(
      '{"availableFeatures":["rt-cfg.kyma-project.io/set-fips-mode"],"AVAILABLEFEATURES":[]}',
    ).config;
    assert.deepEqual(config.availableFeatures, []);
  });

  test('JSON null reads as absent for lists and maps', () => {
    const { config } = readWebhookConfig({
      overrides: null,
      namespaceFeatures: null,
      clusterTrustBundle: null,
      availableFeatures: [FIPS],
    });
    assert.deepEqual(config.overrides, {});
    assert.deepEqual(config.namespaceFeatures, {});
    assert.equal(config.clusterTrustBundle, undefined);
  });
});
