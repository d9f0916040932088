import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WEBHOOK_CERT_LEASE } from '../../../../src/api/runtime-names.js';
import {
  CONTENT_VERSION_ANNOTATION,
  runtimeSetVersion,
  UNWRITTEN_BUNDLE_ANNOTATION,
} from '../../../../src/api/set-version.js';
import {
  clusterTrustBundleContentVersion,
  configMapContentVersion,
  secretContentVersion,
  sourceSetVersion,
} from '../../../../src/controller/sources/content-hash.js';
import type { KubernetesObject } from '@kubernetes/client-node';
import { buildSyncSet } from '../../../../src/controller/direct/sync-set.js';
import { sourcesFor } from '../../../../src/controller/direct/trust-bundle-api-status.js';
import { servedTrustBundleApi } from '../../../../src/kube/trust-bundle-api.js';
import {
  planRuntime,
  planSources,
  removalOrder,
} from '../../../../src/controller/direct/runtime-manifests.js';
import { seedConfigText, syncSources } from '../../../support/fixtures.js';
import type { SyncSources } from '../../../../src/controller/direct/sync-set.js';

describe('buildSyncSet', () => {
  test('a consistent set: trust bundle, then pull Secret, then ConfigMap, each with its content version and none with the set version', () => {
    const r = buildSyncSet(syncSources());
    assert.ok(r.ok);
    assert.deepEqual(
      r.set.objects.map((o) => o.kind),
      ['ClusterTrustBundle', 'Secret', 'ConfigMap'],
    );
    for (const o of r.set.objects) {
      const meta = o.metadata!;
      assert.match(meta.annotations![CONTENT_VERSION_ANNOTATION] ?? '', /^[0-9a-f]{16}$/);
      // The runtime computes the set's version from the content versions: no object is
      // written again only because another one's source changed.
      assert.equal(meta.annotations!['rt-bootstrapper.kyma-project.io/set-version'], undefined, o.kind);
      assert.equal(meta.annotations![UNWRITTEN_BUNDLE_ANNOTATION], undefined, o.kind);
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

/** Sources changed by `over`, with the version the source watcher gives them. */
function versioned(over: Partial<SyncSources>): SyncSources {
  const s = syncSources(over);
  const version = sourceSetVersion({
    pullSecret: s.pullSecret && secretContentVersion(s.pullSecret),
    clusterTrustBundle: s.clusterTrustBundle && clusterTrustBundleContentVersion(s.clusterTrustBundle),
    configMap: s.configMap && configMapContentVersion(s.configMap),
  });
  return { ...s, version };
}

/** The set version a webhook computes from `objects` as written to its runtime. */
function heldBy(objects: readonly KubernetesObject[]): string | undefined {
  const of = (kind: string): KubernetesObject | undefined => objects.find((o) => o.kind === kind);
  return runtimeSetVersion({
    configMap: of('ConfigMap')?.metadata?.annotations,
    pullSecret: of('Secret')?.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION],
    trustBundle: of('ClusterTrustBundle')?.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION],
  });
}

describe('the set version a runtime computes from the objects is the KCP set version', () => {
  const config = JSON.parse(seedConfigText()) as Record<string, unknown>;
  const { clusterTrustBundle: _named, ...unnamed } = config;
  const configMap = (text: string, extra: Record<string, string> = {}): SyncSources['configMap'] => ({
    metadata: { name: 'rt-bootstrapper-config', namespace: 'kcp-system' },
    data: { 'rt-bootstrapper-config.json': text, ...extra },
  });
  for (const [what, over] of [
    ['the config names the bundle', {}],
    ['the config names no bundle, the KCP holds one', { configMap: configMap(JSON.stringify(unnamed)) }],
    [
      'the config names no bundle, the KCP holds none',
      { configMap: configMap(JSON.stringify(unnamed)), clusterTrustBundle: undefined },
    ],
    ['the KCP ConfigMap has another key', { configMap: configMap(seedConfigText(), { notes: 'x' }) }],
  ] as const) {
    test(what, () => {
      const sources = versioned(over);
      const r = buildSyncSet(sources);
      assert.ok(r.ok, r.ok ? '' : r.reason);
      assert.equal(r.set.version, sources.version);
      assert.equal(heldBy(r.set.objects), sources.version);
    });
  }

  test('a runtime that serves no ClusterTrustBundle API: no bundle written, the same set version', () => {
    const r = buildSyncSet(versioned({}));
    assert.ok(r.ok);
    const written = sourcesFor(r.set.objects, { served: false, found: 'none' });
    assert.deepEqual(
      written.map((o) => o.kind),
      ['Secret', 'ConfigMap'],
    );
    assert.equal(heldBy(written), r.set.version);
    // Where it is served, the set as planned.
    assert.equal(sourcesFor(r.set.objects, servedTrustBundleApi('v1')), r.set.objects);
  });

  test('a runtime missing an object of the set holds no set of the KCP', () => {
    const r = buildSyncSet(versioned({}));
    assert.ok(r.ok);
    assert.notEqual(heldBy(r.set.objects.filter((o) => o.kind !== 'Secret')), r.set.version);
    assert.equal(heldBy(r.set.objects.filter((o) => o.kind !== 'ConfigMap')), undefined);
  });

  test('the KCP bundle a config does not name is on the ConfigMap; a change of it changes only the ConfigMap', () => {
    const cm = configMap(JSON.stringify(unnamed));
    const a = buildSyncSet(versioned({ configMap: cm }));
    const b = buildSyncSet(
      versioned({
        configMap: cm,
        clusterTrustBundle: { metadata: { name: 'x' }, spec: { signerName: 's/x', trustBundle: 'PEM 2' } },
      }),
    );
    assert.ok(a.ok && b.ok);
    assert.deepEqual(
      a.set.objects.map((o) => o.kind),
      ['Secret', 'ConfigMap'],
    );
    const ann = (o: KubernetesObject | undefined): string | undefined =>
      o?.metadata?.annotations?.[UNWRITTEN_BUNDLE_ANNOTATION];
    assert.notEqual(ann(a.set.objects[1]), ann(b.set.objects[1]));
    assert.deepEqual(a.set.objects[0], b.set.objects[0]);
    assert.notEqual(a.set.version, b.set.version);
    assert.equal(heldBy(b.set.objects), b.set.version);
  });
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
