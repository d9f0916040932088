import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  ConfigError,
  expandFeatureKeys,
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_ALL,
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_SET_FIPS_MODE,
  FEATURES,
  formatConfigPath,
  isFeatureKey,
  parseWebhookConfig,
  type WebhookConfig,
} from '../../../src/api/webhook-config.js';

const seedConfigText = readFileSync(new URL('../../fixtures/seed-config.json', import.meta.url), 'utf8');

/** The upstream Go project's sample ConfigMap payload (config/config/rt-bootstrapper-config.yaml). */
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
  ],
  namespaceFeatures: { 'kyma-system': [FEATURE_ALL] },
};

function refusal(input: unknown): ConfigError {
  try {
    parseWebhookConfig(input);
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
      },
      availableFeatures: [...FEATURES],
      namespaceFeatures: { 'kyma-system': [FEATURE_ALL] },
      imagePullSecret: { name: 'registry-credentials', namespace: 'kyma-system' },
      failOpen: true,
    } satisfies WebhookConfig);
  });

  test('the upstream-shaped config; unknown nested fields are dropped', () => {
    const config = parseWebhookConfig(upstreamConfig);
    assert.equal(config.clusterTrustBundle?.name, 'rt-bootstrapper-k3d.test:ctb:1');
    assert.equal('resyncInterval' in (config.clusterTrustBundle ?? {}), false);
    assert.deepEqual(config.overrides, upstreamConfig.overrides);
  });

  test('unknown top-level fields are accepted and ignored (forward compatibility)', () => {
    const config = parseWebhookConfig({ ...upstreamConfig, landscape: 'eu', futureFeature: { a: 1 } });
    assert.equal('landscape' in config, false);
    assert.equal('futureFeature' in config, false);
  });

  test('minimal config: defaults filled in', () => {
    assert.deepEqual(parseWebhookConfig({ availableFeatures: [] }), {
      overrides: {},
      availableFeatures: [],
      namespaceFeatures: {},
      imagePullSecret: { name: 'registry-credentials', namespace: 'kyma-system' },
      failOpen: true,
    });
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
  ['availableFeatures missing', {}, 'availableFeatures', /required/],
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
    'invalid namespace name',
    { availableFeatures: [], namespaceFeatures: { Kyma_System: [] } },
    'namespaceFeatures.Kyma_System',
    /invalid namespace name: must be a DNS-1123 label/,
  ],
  [
    'namespaceFeatures not a map',
    { availableFeatures: [], namespaceFeatures: [] },
    'namespaceFeatures',
    /expected record/,
  ],
  [
    'override key without dot',
    { availableFeatures: [], overrides: { nodot: 'ghcr.io' } },
    'overrides.nodot',
    /override key: never matches/,
  ],
  [
    'override key with path',
    { availableFeatures: [], overrides: { 'reg.io/x': 'ghcr.io' } },
    'overrides["reg.io/x"]',
    /override key: not a registry host/,
  ],
  [
    'override target host without dot',
    { availableFeatures: [], overrides: { 'replace.me': 'ghcr' } },
    'overrides["replace.me"]',
    /target host "ghcr"/,
  ],
  [
    'override target with uppercase path',
    { availableFeatures: [], overrides: { 'replace.me': 'ghcr.io/Org' } },
    'overrides["replace.me"]',
    /target path: repository must be lowercase/,
  ],
  [
    'override target not a string',
    { availableFeatures: [], overrides: { 'replace.me': 1 } },
    'overrides["replace.me"]',
    /expected string/,
  ],
  [
    'ctb feature available without clusterTrustBundle',
    { availableFeatures: [FEATURE_ADD_CLUSTER_TRUST_BUNDLE] },
    'clusterTrustBundle',
    /required when "rt-cfg.kyma-project.io\/add-cluster-trust-bundle" is available/,
  ],
  [
    'all available without clusterTrustBundle',
    { availableFeatures: [FEATURE_ALL] },
    'clusterTrustBundle',
    /required when/,
  ],
  [
    'clusterTrustBundle without name',
    { availableFeatures: [], clusterTrustBundle: { certWritePath: 'a.pem' } },
    'clusterTrustBundle.name',
    /required/,
  ],
  [
    'clusterTrustBundle name invalid',
    { availableFeatures: [], clusterTrustBundle: { name: 'Bad Name', certWritePath: 'a.pem' } },
    'clusterTrustBundle.name',
    /ClusterTrustBundle name/,
  ],
  [
    'certWritePath absolute',
    { availableFeatures: [], clusterTrustBundle: { name: 'c', certWritePath: '/etc/a.pem' } },
    'clusterTrustBundle.certWritePath',
    /relative/,
  ],
  [
    'certWritePath with ..',
    { availableFeatures: [], clusterTrustBundle: { name: 'c', certWritePath: '../a.pem' } },
    'clusterTrustBundle.certWritePath',
    /\.\./,
  ],
  [
    'volumeMountPath relative',
    {
      availableFeatures: [],
      clusterTrustBundle: { name: 'c', certWritePath: 'a.pem', volumeMountPath: 'etc/ssl' },
    },
    'clusterTrustBundle.volumeMountPath',
    /absolute/,
  ],
  [
    'volumeName invalid',
    { availableFeatures: [], clusterTrustBundle: { name: 'c', certWritePath: 'a.pem', volumeName: 'Certs' } },
    'clusterTrustBundle.volumeName',
    /DNS-1123 label/,
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
    const error = refusal({ availableFeatures: ['a', 'b'], overrides: { x: 'y' }, failOpen: 1 });
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
