import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WEBHOOK_CERT_LEASE } from '../../../../src/api/runtime-names.js';
import { buildSyncSet, CONTENT_VERSION_ANNOTATION } from '../../../../src/controller/direct/sync-set.js';
import {
  planRuntime,
  planSources,
  removalOrder,
} from '../../../../src/controller/direct/runtime-manifests.js';
import { syncSources } from '../../../support/fixtures.js';

describe('buildSyncSet', () => {
  test('a consistent set: trust bundle, then pull Secret, then ConfigMap, each with its content version, the ConfigMap with the set version', () => {
    const r = buildSyncSet(syncSources());
    assert.ok(r.ok);
    assert.deepEqual(
      r.set.objects.map((o) => o.kind),
      ['ClusterTrustBundle', 'Secret', 'ConfigMap'],
    );
    for (const o of r.set.objects) {
      const meta = o.metadata!;
      assert.match(meta.annotations![CONTENT_VERSION_ANNOTATION] ?? '', /^[0-9a-f]{16}$/);
      assert.equal(
        meta.annotations!['rt-bootstrapper.kyma-project.io/set-version'],
        o.kind === 'ConfigMap' ? 'v-1' : undefined,
        `${o.kind}: only the ConfigMap names the set`,
      );
      assert.equal(meta.labels!['app.kubernetes.io/managed-by'], 'rt-bootstrapper');
    }
    const secret = r.set.objects[1] as {
      metadata: { name: string; namespace: string };
      type: string;
      data: Record<string, string>;
    };
    // The runtime's name comes from the config, not from the KCP's flag.
    assert.deepEqual(
      [secret.metadata.namespace, secret.metadata.name, secret.type],
      ['kyma-system', 'registry-credentials', 'kubernetes.io/dockerconfigjson'],
    );
    assert.deepEqual(secret.data, { '.dockerconfigjson': 'e30=' });
  });

  for (const [what, over, reason] of [
    ['no ConfigMap', { configMap: undefined }, /ConfigMap is missing/],
    [
      'a ConfigMap without the key',
      { configMap: { metadata: { name: 'c', namespace: 'n' }, data: {} } },
      /has no key rt-bootstrapper-config.json/,
    ],
    [
      'an invalid config',
      {
        configMap: {
          metadata: { name: 'c', namespace: 'n' },
          data: { 'rt-bootstrapper-config.json': '{"availableFeatures":["x"]}' },
        },
      },
      /invalid config: availableFeatures\[0\]/,
    ],
    [
      'a config naming a bundle the KCP lacks',
      { clusterTrustBundle: undefined },
      /names ClusterTrustBundle rt-bootstrapper-k3d.test:ctb:1, which does not exist/,
    ],
    [
      'a bundle of another name',
      { clusterTrustBundle: { metadata: { name: 'other:ctb:2' }, spec: { trustBundle: 'PEM' } } },
      /the KCP holds other:ctb:2/,
    ],
    [
      'a problem the watcher reported',
      { problems: [{ source: 'pullSecret', reason: 'missing' }] },
      /pullSecret: missing/,
    ],
  ] as const) {
    test(`refuses ${what}`, () => {
      const r = buildSyncSet(syncSources(over));
      assert.ok(!r.ok);
      assert.match(r.reason, reason);
    });
  }
});

describe('runtime plan', () => {
  const r = buildSyncSet(syncSources());
  assert.ok(r.ok);
  const plan = planRuntime(r.set, { image: 'img:1', version: '1.0.0' });

  test('namespaces come before the set', () => {
    const kinds = planSources(r.set).map((o) => o.kind);
    assert.deepEqual(kinds, ['Namespace', 'ClusterTrustBundle', 'Secret', 'ConfigMap']);
  });

  test('webhook objects carry the release version; the serving certificate is no part of them', () => {
    for (const o of plan.webhook) assert.equal(o.metadata?.labels?.['app.kubernetes.io/version'], '1.0.0');
    // The protocol is the one writer of the Secret and the caBundle (docs/serving-certificate.md).
    assert.ok(!plan.webhook.some((o) => o.kind === 'Secret'));
    const reg = plan.registration[0] as unknown as { webhooks: { clientConfig: { caBundle?: string } }[] };
    assert.equal(reg.webhooks[0]?.clientConfig.caBundle, undefined);
    const args = plan.manifests.deployment.spec?.template.spec?.containers[0]?.args ?? [];
    assert.ok(args.includes('--serving-cert-issuer=external'), 'the replicas only follow the Secret');
    const secretRule = plan.manifests.role.rules?.find((r) => r.resources?.includes('secrets'));
    assert.deepEqual(secretRule?.verbs, ['get', 'list', 'watch'], 'and cannot write it');
    assert.ok(
      !plan.manifests.role.rules?.some((r) => r.resourceNames?.includes(WEBHOOK_CERT_LEASE)),
      'nor elect a writer (the only Lease is the trust-bundle restarter’s)',
    );
  });

  test('a registration URL (tests) replaces the Service', () => {
    const byUrl = planRuntime(
      r.set,
      { image: 'img:1', version: '1.0.0' },
      { registrationUrl: 'https://127.0.0.1:1/m' },
    );
    const reg = byUrl.registration[0] as unknown as { webhooks: { clientConfig: { url?: string } }[] };
    assert.equal(reg.webhooks[0]?.clientConfig.url, 'https://127.0.0.1:1/m');
  });

  test('removal: the registration first, the Deployment before its RBAC, namespaces never', () => {
    const order = removalOrder(plan).map((o) => o.kind);
    assert.equal(order[0], 'MutatingWebhookConfiguration');
    assert.ok(order.indexOf('Deployment') < order.indexOf('ServiceAccount'));
    assert.ok(!order.includes('Namespace'));
  });
});
