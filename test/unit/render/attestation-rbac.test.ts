import type { KubernetesObject, V1PolicyRule } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WATCHER_TLS_SECRET, WEBHOOK_TLS_SECRET } from '../../../src/api/runtime-names.js';
import { planRuntime, type RuntimePlan } from '../../../src/controller/direct/runtime-manifests.js';
import { buildSyncSet, type SyncSet } from '../../../src/controller/direct/sync-set.js';
import { pluralOf } from '../../../src/kube/resource-path.js';
import { renderWebhookManifests, type WebhookManifests } from '../../../src/render/webhook-manifests.js';
import { attestationClusterRules, attestationNamespaceRules } from '../../../src/render/webhook-rbac.js';
import { syncSources } from '../../support/fixtures.js';

const built = buildSyncSet(syncSources());
assert.ok(built.ok);
const set: SyncSet = built.set;
const release = { image: 'example.com/rtb:1.2.3', version: '1.2.3' };
const withDrift = planRuntime(set, release, { drift: { listenerUrl: 'https://kcp.example:8443' } });
const withoutDrift = planRuntime(set, release);

const grantsGet = (rules: readonly V1PolicyRule[], group: string, resource: string, name: string): boolean =>
  rules.some(
    (r) =>
      (r.apiGroups ?? []).includes(group) &&
      (r.resources ?? []).includes(resource) &&
      (r.verbs.includes('get') || r.verbs.includes('*')) &&
      (r.resourceNames === undefined || r.resourceNames.includes(name)),
  );

/** Whether the webhook's ServiceAccount may GET `o`, as the API server's RBAC would decide. */
function canGet(m: WebhookManifests, o: KubernetesObject): boolean {
  const apiVersion = o.apiVersion ?? '';
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const resource = pluralOf(o.kind ?? '');
  const name = o.metadata?.name ?? '';
  if (grantsGet(m.clusterRole.rules ?? [], group, resource, name)) return true;
  return (
    o.metadata?.namespace === m.role.metadata?.namespace &&
    grantsGet(m.role.rules ?? [], group, resource, name)
  );
}

/** Every object the KCP manages on a runtime: the plan, and the serving Secret it writes apart. */
const managed = (plan: RuntimePlan): KubernetesObject[] => [
  ...plan.sources,
  ...plan.webhook,
  ...plan.registration,
  { apiVersion: 'v1', kind: 'Secret', metadata: { name: WEBHOOK_TLS_SECRET, namespace: 'kyma-system' } },
];
const describeObject = (o: KubernetesObject): string =>
  `${o.kind ?? ''} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
const json = (rules: readonly V1PolicyRule[] | undefined): string[] =>
  (rules ?? []).map((r) => JSON.stringify(r));

describe('RBAC of the attestation (drift channel)', () => {
  test('with the drift channel, the webhook may GET every object the KCP manages on its runtime', () => {
    const objects = managed(withDrift);
    // The plan's kinds, so a kind added to the plan without its rule fails here.
    assert.ok(objects.some((o) => o.kind === 'NetworkPolicy' && o.metadata?.name?.includes('egress-to-kcp')));
    assert.ok(objects.some((o) => o.kind === 'Secret' && o.metadata?.name === WATCHER_TLS_SECRET));
    for (const o of objects) assert.ok(canGet(withDrift.manifests, o), `GET ${describeObject(o)}`);
  });

  test('with restart rights per namespace, also their Roles and RoleBindings in those namespaces', () => {
    const scoped = planRuntime(
      set,
      { ...release, restartNamespaces: ['istio-system', 'team'] },
      { drift: { listenerUrl: 'https://kcp.example:8443' } },
    );
    const objects = managed(scoped);
    assert.equal(objects.filter((o) => o.metadata?.namespace === 'team').length, 2);
    for (const o of objects) assert.ok(canGet(scoped.manifests, o), `GET ${describeObject(o)}`);
  });

  test('without it nothing is added (KIM installs keep their rules)', () => {
    const m = withoutDrift.manifests;
    const unreadable = managed(withoutDrift)
      .filter((o) => !canGet(m, o))
      .map(describeObject);
    assert.ok(
      unreadable.includes('ServiceAccount kyma-system/rt-bootstrapper-controller-manager'),
      unreadable.join(),
    );
    assert.ok(unreadable.includes('ClusterRole /rt-bootstrapper-manager-role'));
    const plain = renderWebhookManifests({ image: release.image });
    const added = [...json(attestationClusterRules()), ...json(attestationNamespaceRules([]))];
    for (const rules of [m.clusterRole.rules, m.role.rules, plain.clusterRole.rules, plain.role.rules])
      assert.ok(!json(rules).some((r) => added.includes(r)));
    assert.ok(
      !json(plain.role.rules).some((r) => r.includes('serviceaccounts') || r.includes('networkpolicies')),
    );
  });

  test('the drift channel adds exactly the attestation rules: get, by name, one resource each', () => {
    const d = withDrift.manifests;
    const n = withoutDrift.manifests;
    const addedCluster = json(d.clusterRole.rules).filter((r) => !json(n.clusterRole.rules).includes(r));
    const addedRole = json(d.role.rules).filter((r) => !json(n.role.rules).includes(r));
    assert.deepEqual(addedCluster, json(attestationClusterRules()));
    const policies = d.networkPolicies;
    const policyNames = [
      policies.webhookIngress,
      policies.metricsIngress,
      policies.apiServerEgress,
      policies.driftEgress,
    ].map((p) => p?.metadata?.name ?? '');
    assert.deepEqual(addedRole, json(attestationNamespaceRules(policyNames)));
    for (const r of [...attestationClusterRules(), ...attestationNamespaceRules(policyNames)]) {
      assert.deepEqual(r.verbs, ['get']);
      assert.equal(r.resources?.length, 1);
      assert.ok(
        (r.resourceNames ?? []).length > 0 && !(r.resourceNames ?? []).includes(''),
        JSON.stringify(r),
      );
    }
    assert.equal(policyNames.length, 4);
  });
});
