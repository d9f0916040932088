import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  ConfigError,
  formatConfigPath,
  parseWebhookConfig,
  readWebhookConfig,
  type ReadWebhookConfigOptions,
  type WebhookConfig,
} from '../../../src/api/webhook-config.js';
import {
  expandFeatureKeys,
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_ALL,
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_SET_FIPS_MODE,
  FEATURE_SET_LANDSCAPE,
  FEATURES,
  isFeatureKey,
} from '../../../src/api/webhook-features.js';

const seedConfigText = readFileSync(new URL('../../fixtures/seed-config.json', import.meta.url), 'utf8');

/**
 * The upstream Go project's sample ConfigMap payload (config/config/rt-bootstrapper-config.yaml),
 * with a resyncInterval as upstream's ClusterTrustBundle struct allows.
 */
const upstreamConfig = {
  overrides: { 'replace.me': 'localhost:5001', 'example.com': 'localhost:5002' },
  clusterTrustBundle: {
    name: 'rt-bootstrapper-k3d.test:ctb:1',
    certWritePath: 'kube-apiserver-serving.pem',
    volumeMountPath: '/etc/ssl/certs',
    volumeName: 'rt-bootstrapper-certs',
    resyncInterval: '10m',
  },
  availableFeatures: [
    FEATURE_ALTER_IMG_REGISTRY,
    FEATURE_ADD_IMG_PULL_SECRET,
    FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
    FEATURE_SET_FIPS_MODE,
    FEATURE_SET_LANDSCAPE,
  ],
  namespaceFeatures: { 'kyma-system': [FEATURE_ALL] },
};

function refusal(input: unknown, options?: ReadWebhookConfigOptions): ConfigError {
  try {
    parseWebhookConfig(input, options);
  } catch (error) {
    assert.ok(error instanceof ConfigError, `a ConfigError, got ${String(error)}`);
    return error;
  }
  assert.fail('config was accepted');
}

describe('parseWebhookConfig: accepted configs', () => {
  test('the seed config fixture (JSON text)', () => {
    const config = parseWebhookConfig(seedConfigText);
    assert.deepEqual(config, {
      overrides: { 'replace.me': 'ghcr.io' },
      clusterTrustBundle: {
        name: 'rt-bootstrapper-k3d.test:ctb:1',
        certWritePath: 'kube-apiserver-serving.pem',
        volumeName: 'rt-bootstrapper-certs',
        volumeMountPath: '/etc/ssl/certs',
        resyncIntervalMs: undefined,
      },
      availableFeatures: FEATURES.filter((f) => f !== FEATURE_SET_LANDSCAPE),
      namespaceFeatures: { 'kyma-system': [FEATURE_ALL] },
      imagePullSecret: { name: 'registry-credentials', namespace: 'kyma-system' },
      failOpen: true,
      landscape: undefined,
    } satisfies WebhookConfig);
    assert.deepEqual(readWebhookConfig(seedConfigText, { runtime: {} }).warnings, [], 'no warnings');
  });

  test('the upstream sample (with set-landscape) on a webhook with --landscape; resyncInterval kept', () => {
    const { config, warnings } = readWebhookConfig(upstreamConfig, { runtime: { landscape: 'NS2' } });
    assert.equal(config.clusterTrustBundle?.name, 'rt-bootstrapper-k3d.test:ctb:1');
    assert.equal(config.clusterTrustBundle.resyncIntervalMs, 600_000);
    assert.deepEqual(config.overrides, upstreamConfig.overrides);
    assert.deepEqual(config.availableFeatures, upstreamConfig.availableFeatures);
    assert.equal(config.landscape, 'NS2');
    assert.deepEqual(warnings, []);
  });

  test('unknown fields are accepted and ignored (forward compatibility); landscape is ours', () => {
    const config = parseWebhookConfig({
      ...upstreamConfig,
      landscape: 'eu',
      futureFeature: { a: 1 },
      clusterTrustBundle: { ...upstreamConfig.clusterTrustBundle, future: true },
    });
    assert.equal(config.landscape, 'eu');
    assert.equal('futureFeature' in config, false);
    assert.equal('future' in (config.clusterTrustBundle ?? {}), false);
  });

  test('minimal config: defaults filled in', () => {
    assert.deepEqual(parseWebhookConfig({ availableFeatures: [] }), {
      overrides: {},
      clusterTrustBundle: undefined,
      availableFeatures: [],
      namespaceFeatures: {},
      imagePullSecret: { name: 'registry-credentials', namespace: 'kyma-system' },
      failOpen: true,
      landscape: undefined,
    });
    assert.deepEqual(parseWebhookConfig('{}'), parseWebhookConfig({ availableFeatures: [] }));
  });

  test('clusterTrustBundle defaults for volumeName and volumeMountPath', () => {
    const config = parseWebhookConfig({
      availableFeatures: [FEATURE_ADD_CLUSTER_TRUST_BUNDLE],
      clusterTrustBundle: { name: 'ctb', certWritePath: 'ca.pem' },
    });
    assert.deepEqual(config.clusterTrustBundle, {
      name: 'ctb',
      certWritePath: 'ca.pem',
      volumeName: 'rt-bootstrapper-certs',
      volumeMountPath: '/etc/ssl/certs',
      resyncIntervalMs: undefined,
    });
  });

  test('ours: failOpen false, imagePullSecret partly given', () => {
    const config = parseWebhookConfig({
      availableFeatures: [FEATURE_ALL],
      clusterTrustBundle: { name: 'ctb', certWritePath: 'sub/dir/ca.pem' },
      imagePullSecret: { name: 'my.pull-secret' },
      failOpen: false,
    });
    assert.equal(config.failOpen, false);
    assert.deepEqual(config.imagePullSecret, { name: 'my.pull-secret', namespace: 'kyma-system' });
  });

  test('override targets with ports and path prefixes; port-qualified and localhost keys', () => {
    const o = {
      'docker.io': 'mirror.example.com/dockerhub',
      'localhost:5000': 'localhost:5001/a/b',
      localhost: '[::1]:5000',
      'quay.io:443': 'reg.example.com:8443',
    };
    assert.deepEqual(parseWebhookConfig({ availableFeatures: [], overrides: o }).overrides, o);
  });
});

const refused: readonly [name: string, input: unknown, path: string, message: RegExp][] = [
  ['not an object', [], '(root)', /expected object/],
  ['null', null, '(root)', /expected object/],
  ['availableFeatures not an array', { availableFeatures: 'all' }, 'availableFeatures', /expected array/],
  [
    'unknown feature',
    { availableFeatures: [FEATURE_ALTER_IMG_REGISTRY, FEATURE_SET_FIPS_MODE, 'rt-cfg.kyma-project.io/foo'] },
    'availableFeatures[2]',
    /^unknown feature "rt-cfg.kyma-project.io\/foo"$/,
  ],
  [
    'feature not a string',
    { availableFeatures: [7] },
    'availableFeatures[0]',
    /expected a feature key string/,
  ],
  [
    'unknown feature in namespaceFeatures',
    {
      availableFeatures: [FEATURE_ALL],
      clusterTrustBundle: { name: 'c', certWritePath: 'c.pem' },
      namespaceFeatures: { 'kyma-system': ['x'] },
    },
    'namespaceFeatures["kyma-system"][0]',
    /unknown feature "x"/,
  ],
  [
    'namespace default not in availableFeatures',
    {
      availableFeatures: [FEATURE_SET_FIPS_MODE],
      namespaceFeatures: { istio: [FEATURE_SET_FIPS_MODE, FEATURE_ALTER_IMG_REGISTRY] },
    },
    'namespaceFeatures.istio[1]',
    /"rt-cfg.kyma-project.io\/alter-img-registry" is not in availableFeatures/,
  ],
  [
    'namespaceFeatures not a map',
    { availableFeatures: [], namespaceFeatures: [] },
    'namespaceFeatures',
    /expected record/,
  ],
  [
    'override target not a string',
    { availableFeatures: [], overrides: { 'replace.me': 1 } },
    'overrides["replace.me"]',
    /expected string/,
  ],
  [
    'clusterTrustBundle without name',
    { availableFeatures: [], clusterTrustBundle: { certWritePath: 'a.pem' } },
    'clusterTrustBundle.name',
    /required/,
  ],
  [
    'imagePullSecret name invalid',
    { availableFeatures: [], imagePullSecret: { name: 'Registry_Credentials' } },
    'imagePullSecret.name',
    /Secret name/,
  ],
  [
    'imagePullSecret namespace invalid',
    { availableFeatures: [], imagePullSecret: { namespace: 'kyma.system' } },
    'imagePullSecret.namespace',
    /namespace/,
  ],
  ['failOpen not boolean', { availableFeatures: [], failOpen: 'yes' }, 'failOpen', /expected boolean/],
  ['landscape not a string', { availableFeatures: [], landscape: 5 }, 'landscape', /expected string/],
  [
    'clusterTrustBundle certWritePath empty (upstream: required)',
    { clusterTrustBundle: { name: 'c', certWritePath: '' } },
    'clusterTrustBundle.certWritePath',
    /required/,
  ],
  [
    'clusterTrustBundle volumeName given but empty (upstream: required)',
    { clusterTrustBundle: { name: 'c', certWritePath: 'a.pem', volumeName: '' } },
    'clusterTrustBundle.volumeName',
    /required/,
  ],
  [
    'clusterTrustBundle not an object',
    { clusterTrustBundle: 'ctb' },
    'clusterTrustBundle',
    /expected object/,
  ],
  [
    'resyncInterval neither string nor number',
    { clusterTrustBundle: { name: 'c', certWritePath: 'a.pem', resyncInterval: true } },
    'clusterTrustBundle.resyncInterval',
    /Invalid input/,
  ],
  ['overrides not a map of strings', { overrides: ['ghcr.io'] }, 'overrides', /expected record/],
  [
    'namespaceFeatures list not an array',
    { namespaceFeatures: { ns: FEATURE_ALL } },
    'namespaceFeatures.ns',
    /expected array/,
  ],
];

describe('parseWebhookConfig: refused configs name the offending path', () => {
  for (const [name, input, path, message] of refused) {
    test(name, () => {
      const error = refusal(input);
      const issue = error.issues.find((i) => i.path === path);
      assert.ok(issue, `an issue at ${path}; got ${JSON.stringify(error.issues)}`);
      assert.match(issue.message, message);
      assert.ok(error.message.includes(`${issue.path}: ${issue.message}`), 'message lists "path: message"');
    });
  }

  test('the exact message for an unknown feature', () => {
    const error = refusal({
      availableFeatures: [FEATURE_ALTER_IMG_REGISTRY, FEATURE_SET_FIPS_MODE, 'rt-cfg.kyma-project.io/foo'],
    });
    assert.deepEqual(error.issues, [
      { path: 'availableFeatures[2]', message: 'unknown feature "rt-cfg.kyma-project.io/foo"' },
    ]);
    assert.match(error.message, /availableFeatures\[2\]: unknown feature "rt-cfg.kyma-project.io\/foo"/);
  });

  test('every issue is reported, not just the first', () => {
    const error = refusal({ availableFeatures: ['a', 'b'], overrides: { x: 1 }, failOpen: 1 });
    assert.deepEqual(
      error.issues.map((i) => i.path).sort(),
      ['availableFeatures[0]', 'availableFeatures[1]', 'failOpen', 'overrides.x'].sort(),
    );
  });

  test('invalid JSON text is a ConfigError with the syntax error as cause', () => {
    const error = refusal('{"availableFeatures": [');
    assert.deepEqual(
      error.issues.map((i) => i.path),
      ['(root)'],
    );
    assert.match(error.message, /\(root\): invalid JSON: /);
    assert.ok(error.cause instanceof SyntaxError);
  });
});

describe('feature keys', () => {
  test('the five features, set-landscape last', () => {
    assert.deepEqual(FEATURES, [
      FEATURE_ALTER_IMG_REGISTRY,
      FEATURE_ADD_IMG_PULL_SECRET,
      FEATURE_SET_FIPS_MODE,
      FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
      'rt-cfg.kyma-project.io/set-landscape',
    ]);
  });

  test('isFeatureKey', () => {
    for (const key of [...FEATURES, FEATURE_ALL]) assert.equal(isFeatureKey(key), true, key);
    for (const key of ['rt-cfg.kyma-project.io/foo', '', 1, undefined, 'all'])
      assert.equal(isFeatureKey(key), false);
  });

  test('expandFeatureKeys expands all, keeps FEATURES order and drops duplicates', () => {
    assert.deepEqual([...expandFeatureKeys([FEATURE_ALL])], [...FEATURES]);
    assert.deepEqual(
      [...expandFeatureKeys([FEATURE_SET_FIPS_MODE, FEATURE_ALTER_IMG_REGISTRY, FEATURE_SET_FIPS_MODE])],
      [FEATURE_ALTER_IMG_REGISTRY, FEATURE_SET_FIPS_MODE],
    );
    assert.deepEqual([...expandFeatureKeys([])], []);
  });

  test('formatConfigPath', () => {
    assert.equal(formatConfigPath([]), '(root)');
    assert.equal(formatConfigPath(['a', 'b', 2]), 'a.b[2]');
    assert.equal(formatConfigPath(['overrides', 'replace.me']), 'overrides["replace.me"]');
    assert.equal(
      formatConfigPath(['namespaceFeatures', 'kyma-system', 0]),
      'namespaceFeatures["kyma-system"][0]',
    );
  });
});
