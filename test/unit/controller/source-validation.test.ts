import type { V1Secret } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  configMapWarnings,
  validateClusterTrustBundle,
  validateConfigMap,
  validateManifestsConfigMap,
  validatePullSecret,
  TRUST_BUNDLE_MAX_BYTES,
} from '../../../src/controller/sources/source-validation.js';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { seedConfigText } from '../../support/fixtures.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const SECRET_VALUE = 'sup3r-s3cret-token';

describe('source validation', () => {
  test('a dockerconfigjson Secret needs its key, JSON and an auths object', () => {
    const type = 'kubernetes.io/dockerconfigjson';
    const good = b64(JSON.stringify({ auths: { 'r.example.com': { auth: SECRET_VALUE } } }));
    assert.equal(validatePullSecret({ type, data: { '.dockerconfigjson': good } }), undefined);
    assert.match(validatePullSecret({ type, data: {} }) ?? '', /needs a non-empty key \.dockerconfigjson/);
    assert.match(
      validatePullSecret({ type, data: { '.dockerconfigjson': b64(SECRET_VALUE) } }) ?? '',
      /not a JSON/,
    );
    assert.match(
      validatePullSecret({ type, data: { '.dockerconfigjson': b64(`{"nope":"${SECRET_VALUE}"}`) } }) ?? '',
      /no "auths"/,
    );
  });

  test('reasons never contain the Secret values', () => {
    const bad: V1Secret[] = [
      { type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': b64(SECRET_VALUE) } },
      { type: 'kubernetes.io/dockercfg', data: { '.dockercfg': b64(SECRET_VALUE) } },
      {
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': b64(`{"a":"${SECRET_VALUE}"}`) },
      },
    ];
    for (const secret of bad) {
      const reason = validatePullSecret(secret) ?? '';
      assert.notEqual(reason, '');
      assert.ok(!reason.includes(SECRET_VALUE) && !reason.includes(b64(SECRET_VALUE)), reason);
    }
  });

  test('other Secret types need some data', () => {
    assert.equal(validatePullSecret({ type: 'Opaque', data: { a: b64('x') } }), undefined);
    assert.match(validatePullSecret({ type: 'Opaque' }) ?? '', /no data/);
  });

  test('the ConfigMap must hold a config parseWebhookConfig accepts', () => {
    assert.equal(validateConfigMap({ data: { 'rt-bootstrapper-config.json': seedConfigText() } }), undefined);
    assert.match(validateConfigMap({ data: {} }) ?? '', /rt-bootstrapper-config\.json is missing/);
    assert.match(validateConfigMap({ data: { 'rt-bootstrapper-config.json': '{' } }) ?? '', /invalid JSON/);
    assert.match(
      validateConfigMap({ data: { 'rt-bootstrapper-config.json': '{"availableFeatures":["x"]}' } }) ?? '',
      /availableFeatures/,
    );
    assert.equal(validateConfigMap({ data: { other: seedConfigText() } }, 'other'), undefined);
  });

  test('a usable ConfigMap upstream accepts with a warning names the field; a refused one has no warnings', () => {
    const key = 'rt-bootstrapper-config.json';
    const cfg = JSON.parse(seedConfigText()) as { overrides: Record<string, string> };
    cfg.overrides = { ...cfg.overrides, nodot: 'ghcr.io' };
    const text = JSON.stringify(cfg);
    assert.equal(validateConfigMap({ data: { [key]: text } }), undefined);
    const warnings = configMapWarnings({ data: { [key]: text } });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? '', /^overrides\.nodot: key: never matches/);
    assert.deepEqual(configMapWarnings({ data: { [key]: seedConfigText() } }), []);
    assert.deepEqual(configMapWarnings({ data: { [key]: '{' } }), []);
    assert.deepEqual(configMapWarnings({ data: {} }), []);
    assert.equal(configMapWarnings({ data: { other: text } }, 'other').length, 1);
  });

  test('a ClusterTrustBundle needs at least one parsable certificate and nothing else', async () => {
    const ca = await createCertificateAuthority({ commonName: 'validation-test' });
    const spec = (trustBundle: string) => ({ spec: { signerName: 'x/y', trustBundle } });
    assert.equal(validateClusterTrustBundle(spec(ca.certPem)), undefined);
    assert.equal(validateClusterTrustBundle(spec(`${ca.certPem}\n${ca.certPem}`)), undefined);
    assert.match(validateClusterTrustBundle(spec('')) ?? '', /no certificate/);
    assert.match(
      validateClusterTrustBundle(spec('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')) ??
        '',
      /certificate 1 cannot be parsed/,
    );
    assert.match(
      validateClusterTrustBundle(
        spec(`${ca.certPem}-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n`),
      ) ?? '',
      /PEM block 2 is not a CERTIFICATE/,
    );
  });

  test('a ClusterTrustBundle with junk is refused, the field named: 1 MB of BEGIN lines, a stray boundary, too large', async () => {
    const ca = await createCertificateAuthority({ commonName: 'validation-junk' });
    const spec = (trustBundle: string) => ({ spec: { signerName: 'x/y', trustBundle } });
    const begins = '-----BEGIN CERTIFICATE-----\n'.repeat(36_000);
    assert.ok(begins.length > 1_000_000 && begins.length < TRUST_BUNDLE_MAX_BYTES);
    // Junk after a good certificate: the lazy pattern skipped it and passed the bundle on.
    assert.equal(
      validateClusterTrustBundle(spec(`${ca.certPem}${begins}`)),
      'spec.trustBundle: PEM block 2 (CERTIFICATE) has no END line of its own',
    );
    assert.equal(
      validateClusterTrustBundle(spec(begins)),
      'spec.trustBundle: PEM block 1 (CERTIFICATE) has no END line of its own',
    );
    assert.equal(
      validateClusterTrustBundle(spec(`${ca.certPem}-----END CERTIFICATE-----\n`)),
      'spec.trustBundle: an END line without BEGIN before block 2',
    );
    assert.equal(
      validateClusterTrustBundle(spec(`${ca.certPem}${' '.repeat(TRUST_BUNDLE_MAX_BYTES)}`)),
      `spec.trustBundle is larger than ${TRUST_BUNDLE_MAX_BYTES} bytes (the API server's limit)`,
    );
    // Comments between certificates, as public bundles carry them, are fine.
    assert.equal(
      validateClusterTrustBundle(spec(`# root one\n=====\n${ca.certPem}\n# root two\n${ca.certPem}`)),
      undefined,
    );
  });

  test("KIM's manifests ConfigMap needs manifests.yaml whose pieces (split on ---) are YAML", () => {
    const docs = [
      'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: kyma-system\n',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: b\n',
    ];
    assert.equal(validateManifestsConfigMap({ data: { 'manifests.yaml': docs.join('---\n') } }), undefined);
    assert.equal(
      validateManifestsConfigMap({ data: { 'manifests.yaml': `---\n${docs[0]}---\n` } }),
      undefined,
    );
    assert.equal(
      validateManifestsConfigMap({ data: { 'manifests.yaml': '' } }),
      undefined,
      'KIM accepts none',
    );
    for (const cm of [{}, { data: {} }, { binaryData: { 'manifests.yaml': 'AAAA' } }]) {
      assert.equal(validateManifestsConfigMap(cm), 'key manifests.yaml is missing');
    }
    assert.equal(
      validateManifestsConfigMap({ data: { 'manifests.yaml': `${docs[0]}---\nkind: [unclosed\n` } }),
      'key manifests.yaml: document 2 (split on ---) is not valid YAML',
    );
    assert.match(
      validateManifestsConfigMap({ data: { 'manifests.yaml': 'a: 1\na: 2\n' } }) ?? '',
      /document 1/,
      'a duplicate key is refused by KIM',
    );
  });

  test('the manifests ConfigMap is not the webhook config: neither is checked for the other', () => {
    assert.equal(validateManifestsConfigMap({ data: { 'manifests.yaml': 'kind: Anything\n' } }), undefined);
    assert.equal(
      validateManifestsConfigMap({ data: { 'rt-bootstrapper-config.json': seedConfigText() } }),
      'key manifests.yaml is missing',
    );
  });
});
