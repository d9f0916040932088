import type { V1PolicyRule } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  RESTART_RIGHTS_ROLE,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_SERVICE_ACCOUNT,
} from '../../../src/api/runtime-names.js';
import { restartNamespacesOf } from '../../../src/cli/commands/restart-namespaces.js';
import { planRuntime } from '../../../src/controller/direct/runtime-manifests.js';
import { buildSyncSet } from '../../../src/controller/direct/sync-set.js';
import { renderKimManifests, splitAsKim } from '../../../src/render/kim-manifests.js';
import { renderWebhookManifests, webhookManifestList } from '../../../src/render/webhook-manifests.js';
import { restartRightsRules } from '../../../src/render/webhook-rbac.js';
import { syncSources } from '../../support/fixtures.js';

const image = 'example.com/rtb:1.2.3';
const json = (rules: readonly V1PolicyRule[] | undefined): string[] =>
  (rules ?? []).map((r) => JSON.stringify(r));
/** Whether `rules` let the ServiceAccount `verb` `resource` of `group` (any name). */
const grants = (
  rules: readonly V1PolicyRule[] | undefined,
  group: string,
  resource: string,
  verb: string,
): boolean =>
  (rules ?? []).some(
    (r) =>
      (r.apiGroups ?? []).includes(group) &&
      (r.resources ?? []).includes(resource) &&
      r.verbs.includes(verb) &&
      r.resourceNames === undefined,
  );
const names = (objects: readonly object[]): string[] =>
  objects.map((o) => {
    const x = o as { kind: string; metadata: { name: string; namespace?: string } };
    return `${x.kind} ${x.metadata.namespace ?? ''}/${x.metadata.name}`;
  });

describe('restart rights per namespace (rtb render webhook --restart-namespaces)', () => {
  const cluster = renderWebhookManifests({ image });
  const scoped = renderWebhookManifests({ image, restartNamespaces: ['kyma-system', 'istio-system'] });

  test('by default (as today): cluster-wide rights to patch workloads and evict, no Role per namespace', () => {
    assert.deepEqual(cluster.restartRights, []);
    for (const resource of ['deployments', 'statefulsets', 'daemonsets'])
      assert.ok(grants(cluster.clusterRole.rules, 'apps', resource, 'patch'), resource);
    assert.ok(grants(cluster.clusterRole.rules, '', 'pods/eviction', 'create'));
    assert.ok(
      !(cluster.deployment.spec?.template.spec?.containers[0]?.args ?? []).some((a) =>
        a.startsWith('--restart-namespaces'),
      ),
    );
  });

  test('listed: a Role and RoleBinding per namespace, and no cluster-wide right to read or patch workloads or evict', () => {
    assert.deepEqual(names(scoped.restartRights.flatMap((r) => [r.role, r.binding])), [
      `Role kyma-system/${RESTART_RIGHTS_ROLE}`,
      `RoleBinding kyma-system/${RESTART_RIGHTS_ROLE}`,
      `Role istio-system/${RESTART_RIGHTS_ROLE}`,
      `RoleBinding istio-system/${RESTART_RIGHTS_ROLE}`,
    ]);
    for (const { role, binding } of scoped.restartRights) {
      assert.deepEqual(role.rules, restartRightsRules());
      assert.deepEqual(binding.roleRef, {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: RESTART_RIGHTS_ROLE,
      });
      assert.deepEqual(binding.subjects, [
        { kind: 'ServiceAccount', name: WEBHOOK_SERVICE_ACCOUNT, namespace: 'kyma-system' },
      ]);
      assert.equal(role.metadata?.labels?.['app.kubernetes.io/managed-by'], 'rt-bootstrapper');
    }
    for (const resource of ['deployments', 'statefulsets', 'daemonsets', 'replicasets'])
      for (const verb of ['get', 'patch'])
        assert.ok(!grants(scoped.clusterRole.rules, 'apps', resource, verb), `${verb} ${resource}`);
    assert.ok(!grants(scoped.clusterRole.rules, '', 'pods/eviction', 'create'));
    // The Pods' list and watch (the restarter's cache) and label stay cluster-wide.
    assert.ok(grants(scoped.clusterRole.rules, '', 'pods', 'watch'));
    assert.ok(grants(scoped.clusterRole.rules, '', 'pods', 'patch'));
    // The restarter's status on its own Deployment, by name, in its namespace.
    assert.ok(
      json(scoped.role.rules).includes(
        JSON.stringify({
          apiGroups: ['apps'],
          resources: ['deployments'],
          resourceNames: [WEBHOOK_DEPLOYMENT],
          verbs: ['get', 'patch'],
        }),
      ),
    );
    assert.ok(
      (scoped.deployment.spec?.template.spec?.containers[0]?.args ?? []).includes(
        '--restart-namespaces=kyma-system,istio-system',
      ),
    );
    // Applied right after the webhook's own RBAC.
    const list = names(webhookManifestList(scoped));
    assert.equal(
      list.indexOf(`Role istio-system/${RESTART_RIGHTS_ROLE}`),
      list.indexOf('RoleBinding kyma-system/rt-bootstrapper-leader-election-rolebinding') + 3,
    );
  });

  test("rendered for KIM (each with its namespace) and for direct mode's release", () => {
    const kim = renderKimManifests({ image, version: '1.2.3', restartNamespaces: ['istio-system'] });
    const docs = splitAsKim(kim.text);
    assert.ok(
      docs.some(
        (d) =>
          /^kind: Role$/m.test(d) &&
          d.includes(`name: ${RESTART_RIGHTS_ROLE}`) &&
          d.includes('namespace: istio-system'),
      ),
    );
    assert.ok(docs.some((d) => /^kind: RoleBinding$/m.test(d) && d.includes(`name: ${RESTART_RIGHTS_ROLE}`)));
    const built = buildSyncSet(syncSources());
    assert.ok(built.ok);
    const plan = planRuntime(built.set, { image, version: '1.2.3', restartNamespaces: ['istio-system'] });
    assert.deepEqual(
      names(plan.webhook).filter((n) => n.includes(RESTART_RIGHTS_ROLE)),
      [`Role istio-system/${RESTART_RIGHTS_ROLE}`, `RoleBinding istio-system/${RESTART_RIGHTS_ROLE}`],
    );
    const plain = planRuntime(built.set, { image, version: '1.2.3' });
    assert.ok(!names(plain.webhook).some((n) => n.includes(RESTART_RIGHTS_ROLE)));
  });

  test('the flag: comma-separated, trimmed, duplicates dropped; a name that is no namespace is refused', () => {
    assert.equal(restartNamespacesOf(undefined), undefined);
    assert.deepEqual(restartNamespacesOf('kyma-system, istio-system,kyma-system'), [
      'kyma-system',
      'istio-system',
    ]);
    assert.deepEqual(restartNamespacesOf(''), []);
    assert.throws(() => restartNamespacesOf('Kyma'), /--restart-namespaces: "Kyma" is not a namespace name/);
    assert.throws(
      () => restartNamespacesOf('a/b', '--webhook-restart-namespaces'),
      /--webhook-restart-namespaces/,
    );
  });
});
