/**
 * The upstream Go implementation's config cases (kyma-project/rt-bootstrapper,
 * pkg/api/v1/types_test.go: TestNewConfig, TestNewConfig_featureValidation, and its sample
 * ConfigMap config/config/rt-bootstrapper-config.yaml), read as `rtb webhook` reads a config:
 * what upstream accepts is accepted, what it refuses is refused with the field named. Where we
 * accept more, docs/upstream-differences.md (item 12) says so; asserted at the end.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, readWebhookConfig } from '../../../src/api/webhook-config.js';

const IMG = 'rt-cfg.kyma-project.io/alter-img-registry';
const PULL = 'rt-cfg.kyma-project.io/add-img-pull-secret';
const ALL = 'rt-cfg.kyma-project.io/all';

// As on a webhook started with --landscape, the way upstream runs.
const onWebhook = { runtime: { landscape: 'NS2' } };

function refusedWith(text: string, message: RegExp): void {
  assert.throws(
    () => readWebhookConfig(text, onWebhook),
    (error: unknown) => error instanceof ConfigError && error.issues.some((i) => message.test(i.message)),
  );
}

describe('upstream TestNewConfig', () => {
  test('happy path: old fields ignored, the override kept (it never matches: a warning)', () => {
    const { config, warnings } = readWebhookConfig(
      `{
  "imagePullSecretName": "ipsn2",
  "imagePullSecretNamespace": "ipsns2",
  "secretSyncInterval": "10m",
  "overrides": { "rn2": "orn2" }
}`,
      onWebhook,
    );
    assert.deepEqual(config.overrides, { rn2: 'orn2' });
    assert.deepEqual(config.availableFeatures, []);
    assert.deepEqual(config.namespaceFeatures, {});
    assert.equal(config.clusterTrustBundle, undefined);
    assert.deepEqual(
      warnings.map((w) => w.path),
      ['availableFeatures', 'overrides.rn2'],
    );
  });
});

describe('upstream TestNewConfig_featureValidation', () => {
  const base = `{"overrides":{"x":"y"}`;
  const accepted: readonly [name: string, json: string][] = [
    [
      'all with availableFeatures expands valid',
      `${base},"availableFeatures":["${IMG}","${PULL}"],"namespaceFeatures":{"ns":["${ALL}"]}}`,
    ],
    ['legacy explicit features without availableFeatures', `${base},"namespaceFeatures":{"ns":["${IMG}"]}}`],
    ['all without availableFeatures', `${base},"namespaceFeatures":{"ns":["${ALL}"]}}`],
    [
      'all with empty availableFeatures array',
      `${base},"availableFeatures":[],"namespaceFeatures":{"ns":["${ALL}"]}}`,
    ],
    ['empty availableFeatures when key present', `${base},"availableFeatures":[]}`],
  ];
  for (const [name, json] of accepted) {
    test(`accepted: ${name}`, () => {
      assert.doesNotThrow(() => readWebhookConfig(json, onWebhook));
    });
  }

  const refused: readonly [name: string, json: string, message: RegExp, path: string][] = [
    [
      'unknown in availableFeatures',
      `${base},"availableFeatures":["rt-cfg.kyma-project.io/unknown"],"namespaceFeatures":{"ns":["${IMG}"]}}`,
      /unknown feature/,
      'availableFeatures[0]',
    ],
    [
      'explicit namespace feature not in availableFeatures when set',
      `${base},"availableFeatures":["${IMG}"],"namespaceFeatures":{"ns":["${IMG}","${PULL}"]}}`,
      /not in availableFeatures/,
      'namespaceFeatures.ns[1]',
    ],
    [
      'unknown token in namespaceFeatures',
      `${base},"namespaceFeatures":{"ns":["not-a-feature"]}}`,
      /unknown feature/,
      'namespaceFeatures.ns[0]',
    ],
  ];
  for (const [name, json, message, path] of refused) {
    test(`refused: ${name}`, () => {
      refusedWith(json, message);
      try {
        readWebhookConfig(json, onWebhook);
      } catch (error) {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(
          error.issues.map((i) => i.path),
          [path],
        );
      }
    });
  }
});

describe("upstream's sample ConfigMap (config/config/rt-bootstrapper-config.yaml)", () => {
  const sample = `{
  "overrides": { "replace.me": "localhost:5001", "example.com": "localhost:5002" },
  "clusterTrustBundle": {
    "name": "rt-bootstrapper-k3d.test:ctb:1",
    "certWritePath": "kube-apiserver-serving.pem",
    "volumeMountPath": "/etc/ssl/certs",
    "volumeName": "rt-bootstrapper-certs"
  },
  "availableFeatures": [
    "rt-cfg.kyma-project.io/alter-img-registry",
    "rt-cfg.kyma-project.io/add-img-pull-secret",
    "rt-cfg.kyma-project.io/add-cluster-trust-bundle",
    "rt-cfg.kyma-project.io/set-fips-mode",
    "rt-cfg.kyma-project.io/set-landscape"
  ],
  "namespaceFeatures": { "kyma-system": ["rt-cfg.kyma-project.io/all"] }
}`;

  test('accepted without a warning by a webhook with --landscape', () => {
    const { config, warnings } = readWebhookConfig(sample, onWebhook);
    assert.equal(config.landscape, 'NS2');
    assert.equal(config.availableFeatures.length, 5);
    assert.deepEqual(warnings, []);
  });

  test('refused without one, as upstream refuses to start (main.go)', () => {
    assert.throws(
      () => readWebhookConfig(sample, { runtime: {} }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.issues.length === 1 &&
        error.issues[0]?.path === 'availableFeatures[4]',
    );
  });
});

describe('accepted here, refused by upstream (docs/upstream-differences.md, item 12)', () => {
  for (const [name, json] of [
    ['no overrides', `{"availableFeatures":["${IMG}"]}`],
    [
      'all in availableFeatures',
      `{"overrides":{},"availableFeatures":["${ALL}"],"landscape":"NS2","clusterTrustBundle":{"name":"c","certWritePath":"c.pem"}}`,
    ],
    [
      'clusterTrustBundle without volumeName and volumeMountPath',
      `{"overrides":{},"clusterTrustBundle":{"name":"c","certWritePath":"c.pem"}}`,
    ],
  ] as const) {
    test(name, () => {
      assert.doesNotThrow(() => readWebhookConfig(json, onWebhook));
    });
  }
});
