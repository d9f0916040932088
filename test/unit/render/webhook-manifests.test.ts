import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  renderWebhookManifests,
  webhookManifestList,
  WEBHOOK_NAME,
} from '../../../src/render/webhook-manifests.js';

const m = renderWebhookManifests({ image: 'example.com/rtb:1.2.3', caBundlePem: 'PEM' });
const hook = m.mutatingWebhookConfiguration.webhooks![0]!;

describe('rendered webhook manifests', () => {
  test('the webhook registration has the contract settings', () => {
    assert.equal(hook.sideEffects, 'NoneOnDryRun');
    assert.equal(hook.reinvocationPolicy, 'IfNeeded');
    assert.equal(hook.timeoutSeconds, 5);
    assert.equal(hook.failurePolicy, 'Ignore');
    assert.deepEqual(hook.admissionReviewVersions, ['v1']);
    assert.deepEqual(
      hook.rules!.map((r) => [r.operations, r.resources]),
      [
        [['CREATE', 'UPDATE'], ['pods']],
        [['UPDATE'], ['pods/ephemeralcontainers']],
      ],
    );
    assert.equal(hook.clientConfig.caBundle, Buffer.from('PEM').toString('base64'));
    assert.deepEqual(hook.clientConfig.service, {
      name: WEBHOOK_NAME,
      namespace: 'kyma-system',
      path: '/mutate',
      port: 443,
    });
  });

  test('kube-system and the webhook itself are kept out', () => {
    assert.deepEqual(hook.namespaceSelector?.matchExpressions, [
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] },
    ]);
    const own = m.deployment.spec!.template.metadata!.labels!;
    const expr = hook.objectSelector!.matchExpressions![0]!;
    assert.equal(expr.operator, 'NotIn');
    assert.ok(
      expr.values!.includes(own[expr.key]!),
      'the objectSelector excludes the webhook Pods by their own label',
    );
  });

  test('two replicas, a PodDisruptionBudget, a Service on 443', () => {
    assert.equal(m.deployment.spec!.replicas, 2);
    assert.equal(m.podDisruptionBudget.spec!.minAvailable, 1);
    assert.deepEqual(m.podDisruptionBudget.spec!.selector, m.deployment.spec!.selector);
    assert.equal(m.service.spec!.ports![0]!.port, 443);
    assert.equal(m.deployment.spec!.template.spec!.containers[0]!.image, 'example.com/rtb:1.2.3');
  });

  test('the container caps its young generation, as the benchmark runs it', () => {
    assert.deepEqual(m.deployment.spec!.template.spec!.containers[0]!.env, [
      { name: 'NODE_OPTIONS', value: '--max-semi-space-size=4' },
    ]);
  });

  test('RBAC: Secrets only by name except create, ConfigMap only by name, nothing else writable', () => {
    const secretRules = m.clusterRole.rules!.filter((r) => r.resources!.includes('secrets'));
    for (const r of secretRules) {
      if (r.verbs.join() === 'create') continue;
      assert.deepEqual(r.resourceNames, ['registry-credentials']);
    }
    assert.deepEqual(m.role.rules, [
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['rt-bootstrapper-config'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    const namespaces = m.clusterRole.rules!.find((r) => r.resources!.includes('namespaces'))!;
    assert.deepEqual(namespaces.verbs, ['get', 'list', 'watch']);
  });

  test('a URL client config for local landscapes; the registration is applied last', () => {
    const local = renderWebhookManifests({ image: 'x', url: 'https://127.0.0.1:9443/mutate' });
    assert.equal(
      local.mutatingWebhookConfiguration.webhooks![0]!.clientConfig.url,
      'https://127.0.0.1:9443/mutate',
    );
    assert.equal(local.mutatingWebhookConfiguration.webhooks![0]!.clientConfig.service, undefined);
    const list = webhookManifestList(local);
    assert.equal((list.at(-1) as { kind: string }).kind, 'MutatingWebhookConfiguration');
    assert.equal((list[0] as { kind: string }).kind, 'Namespace');
  });
});
