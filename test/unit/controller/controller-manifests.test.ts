import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CONTROLLER_NAME,
  controllerManifestList,
  renderControllerManifests,
} from '../../../src/render/controller-manifests.js';

const m = renderControllerManifests({
  image: 'example.com/rtb:1.2.3',
  pullSecretName: 'pull',
  clusterTrustBundleName: 'ctb',
  runtimeSelector: 'env=prod',
});

describe('rendered controller manifests', () => {
  test('two replicas, probes on the plain-HTTP port, the flags of rtb controller', () => {
    const d = m.deployment;
    assert.equal(d.metadata?.namespace, 'kcp-system');
    assert.equal(d.spec?.replicas, 2);
    const c = d.spec.template.spec!.containers[0]!;
    assert.equal(c.image, 'example.com/rtb:1.2.3');
    assert.equal(c.readinessProbe?.httpGet?.path, '/readyz');
    assert.equal(c.livenessProbe?.httpGet?.path, '/healthz');
    assert.equal(c.ports?.[0]?.containerPort, 8080);
    assert.deepEqual(c.args, [
      'controller',
      '--mode=annotate',
      '--namespace=kcp-system',
      '--pull-secret=pull',
      '--cluster-trust-bundle=ctb',
      '--config-map=rt-bootstrapper-config',
      '--state-config-map=rt-bootstrapper-controller-state',
      '--runtime-selector=env=prod',
      '--signal=annotation',
      '--coalesce=2s',
      '--metrics-port=8080',
      '--leader-elect',
      '--leader-election-id=rt-bootstrapper-controller',
      '--log-level=info',
      '--fips',
    ]);
    assert.equal(d.spec.template.spec!.serviceAccountName, CONTROLLER_NAME);
    assert.equal(c.env?.[0]?.valueFrom?.fieldRef?.fieldPath, 'metadata.name');
  });

  test('RBAC: sources read-only and by name, writes only to the Lease, the state, Runtimes and Events', () => {
    const rules = m.role.rules!;
    const writes = rules.filter((r) => r.verbs.some((v) => !['get', 'list', 'watch'].includes(v)));
    for (const r of writes) {
      const what = `${r.apiGroups!.join()}/${r.resources!.join()}`;
      if (r.verbs.join() === 'create') {
        assert.ok(
          ['/configmaps', 'coordination.k8s.io/leases', ',events.k8s.io/events'].includes(what),
          what,
        );
        continue;
      }
      if (what === 'infrastructuremanager.kyma-project.io/runtimes') {
        assert.deepEqual(r.verbs, ['get', 'list', 'watch', 'patch']);
        continue;
      }
      if (what === ',events.k8s.io/events') continue;
      assert.ok(r.resourceNames && r.resourceNames.length === 1, `${what} is limited by name`);
    }
    const secrets = rules.filter((r) => r.resources!.includes('secrets'));
    assert.deepEqual(secrets, [
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['pull'], verbs: ['get', 'list', 'watch'] },
    ]);
    assert.deepEqual(m.clusterRole?.rules, [
      {
        apiGroups: ['certificates.k8s.io'],
        resources: ['clustertrustbundles'],
        resourceNames: ['ctb'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    assert.equal(m.roleBinding.subjects?.[0]?.name, CONTROLLER_NAME);
  });

  test('no ClusterTrustBundle, no cluster-wide RBAC; the Deployment comes last', () => {
    const plain = renderControllerManifests({ image: 'i', pullSecretName: 'pull' });
    assert.equal(plain.clusterRole, undefined);
    const list = controllerManifestList(plain) as { kind: string }[];
    assert.deepEqual(
      list.map((o) => o.kind),
      ['ServiceAccount', 'Role', 'RoleBinding', 'PriorityLevelConfiguration', 'FlowSchema', 'Deployment'],
    );
    assert.equal((controllerManifestList(m) as { kind: string }[]).length, 8);
  });

  test("API Priority and Fairness: the controller's ServiceAccount gets a priority level of its own", () => {
    const { flowSchema, priorityLevel } = m.flowControl;
    const level = priorityLevel.spec!;
    assert.equal(level.type, 'Limited');
    const limited = level.limited!;
    assert.ok((limited.nominalConcurrencyShares ?? 0) > 0);
    assert.equal(limited.limitResponse!.type, 'Queue');
    const spec = flowSchema.spec!;
    assert.equal(spec.priorityLevelConfiguration.name, priorityLevel.metadata?.name);
    // Matched before the catch-all schema of every ServiceAccount (service-accounts, 9000).
    assert.ok((spec.matchingPrecedence ?? 0) < 9000);
    const rule = spec.rules![0]!;
    assert.deepEqual(rule.subjects, [
      { kind: 'ServiceAccount', serviceAccount: { name: CONTROLLER_NAME, namespace: 'kcp-system' } },
    ]);
    assert.equal(m.deployment.spec!.template.spec!.serviceAccountName, CONTROLLER_NAME);
    const resources = rule.resourceRules![0]!;
    assert.deepEqual(resources.verbs, ['*']);
    assert.equal(resources.clusterScope, true);
  });

  test("annotate mode with KIM's manifests ConfigMap: read by name and passed as a flag; direct mode ignores it", () => {
    const withManifests = renderControllerManifests({
      image: 'i',
      pullSecretName: 'pull',
      manifestsConfigMapName: 'runtime-bootstrapper-manifests',
    });
    const args = withManifests.deployment.spec!.template.spec!.containers[0]!.args!;
    assert.ok(args.includes('--manifests-config-map=runtime-bootstrapper-manifests'));
    const reads = withManifests.role.rules!.filter(
      (r) => r.resources!.includes('configmaps') && r.verbs.join() === 'get,list,watch',
    );
    assert.deepEqual(reads, [
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['rt-bootstrapper-config', 'runtime-bootstrapper-manifests'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    const plainArgs = m.deployment.spec!.template.spec!.containers[0]!.args!;
    assert.ok(!plainArgs.some((a) => a.startsWith('--manifests-config-map')), 'unset: not watched');
    const direct = renderControllerManifests({
      image: 'i',
      pullSecretName: 'pull',
      mode: 'direct',
      manifestsConfigMapName: 'runtime-bootstrapper-manifests',
    });
    assert.ok(
      !direct.deployment.spec!.template.spec!.containers[0]!.args!.some((a) => a.includes('manifests')),
    );
    assert.ok(!JSON.stringify(direct.role.rules).includes('runtime-bootstrapper-manifests'));
  });
  test('sharded direct mode: every replica works (--sharding, no leader election), RBAC for its Leases by label', () => {
    const sharded = renderControllerManifests({
      image: 'x',
      pullSecretName: 'pull',
      mode: 'direct',
      replicas: 3,
      sharding: true,
    });
    assert.equal(sharded.deployment.spec?.replicas, 3);
    const args = sharded.deployment.spec.template.spec!.containers[0]!.args ?? [];
    assert.ok(args.includes('--sharding'));
    assert.ok(!args.some((a) => a.startsWith('--leader-elect')));
    const leases = sharded.role.rules?.filter((r) => r.resources?.includes('leases')) ?? [];
    assert.ok(
      leases.some(
        (r) =>
          r.resourceNames === undefined &&
          ['list', 'watch', 'update', 'delete'].every((v) => r.verbs.includes(v)),
      ),
    );
    // Unsharded, the Lease stays writable by name only.
    const single = renderControllerManifests({ image: 'x', pullSecretName: 'pull', mode: 'direct' });
    const open = single.role.rules?.filter(
      (r) => r.resources?.includes('leases') && r.resourceNames === undefined && r.verbs.includes('update'),
    );
    assert.deepEqual(open, []);
    assert.throws(
      () => renderControllerManifests({ image: 'x', pullSecretName: 'pull', sharding: true }),
      /direct-mode/,
    );
  });
});
