import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  type KubernetesObject,
  type V1NetworkPolicy,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_SERVICE_ACCOUNT,
} from '../../src/api/runtime-names.js';
import { applyObjects } from '../../src/kube/apply.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { renderWebhookManifests, webhookManifestList } from '../../src/render/webhook-manifests.js';
import {
  removeUpstreamLeftovers,
  startUpstreamCleanup,
  type CleanupLogger,
} from '../../src/runtime-agent/upstream-cleanup.js';
import { UPSTREAM_LEFTOVERS } from '../../src/api/upstream-leftovers.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { asWebhookServiceAccount, clientAs } from '../support/kcp.js';
import {
  gardenerCertManagementCrds,
  UPSTREAM_NAMESPACES,
  upstreamInstall,
} from '../support/upstream-install.js';

const plane = useControlPlane({ clusters: ['runtime'] });

const UPSTREAM = upstreamInstall();

const ref = (o: KubernetesObject): string =>
  `${o.kind ?? ''} ${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
const LISTED = new Set(UPSTREAM_LEFTOVERS.map((l) => `${l.kind} ${l.namespace ?? ''}/${l.name}`));

interface Line {
  readonly level: 'info' | 'warn';
  readonly obj: Record<string, unknown>;
  readonly msg: string;
}
function recordingLogger(): { logger: CleanupLogger; lines: Line[] } {
  const lines: Line[] = [];
  return {
    lines,
    logger: {
      info: (obj, msg) => lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg }),
      warn: (obj, msg) => lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
    },
  };
}

async function exists(kc: KubeConfig, o: KubernetesObject): Promise<boolean> {
  try {
    await KubernetesObjectApi.makeApiClient(kc).read({
      apiVersion: o.apiVersion ?? '',
      kind: o.kind ?? '',
      metadata: {
        name: o.metadata?.name ?? '',
        ...(o.metadata?.namespace ? { namespace: o.metadata.namespace } : {}),
      },
    });
    return true;
  } catch (error) {
    if (statusCodeOf(error) === 404) return false;
    throw error;
  }
}

/** A rejection handler that swallows one HTTP status. */
const ignore =
  (code: number) =>
  (error: unknown): void => {
    if (statusCodeOf(error) !== code) throw error;
  };

describe('removing what an upstream install leaves, on a real API server', () => {
  test('after KIM applied our release over an upstream install, exactly the listed objects go', async () => {
    const cluster = plane().cluster('runtime');
    const admin = cluster.kubeConfig();
    await ensureCrds(admin, gardenerCertManagementCrds());
    const core = admin.makeApiClient(CoreV1Api);
    for (const name of UPSTREAM_NAMESPACES) await core.createNamespace({ body: { metadata: { name } } });

    // Upstream as KIM installed it: created, so another manager owns every field.
    const objects = KubernetesObjectApi.makeApiClient(admin);
    for (const o of UPSTREAM) await objects.create(o);
    // Upstream's k3d overlay asks cert-manager's CA injector to write the caBundle.
    await objects.patch(
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: {
          name: MUTATING_WEBHOOK_CONFIGURATION,
          annotations: { 'cert-manager.io/inject-ca-from': 'kyma-system/rt-bootstrapper-serving-cert' },
        },
      },
      undefined,
      undefined,
      'kubectl',
      undefined,
      PatchStrategy.MergePatch,
    );
    // The Secret Gardener cert-management wrote for upstream's Certificate.
    await core.createNamespacedSecret({
      namespace: 'kyma-system',
      body: {
        metadata: { name: 'rt-bootstrapper-webhook-cert' },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': '', 'tls.key': '' },
      },
    });

    // KIM applies our release over it: server-side, forced, as kim-bootstrapper.
    const ours = webhookManifestList(
      renderWebhookManifests({ image: 'example.com/rtb:1.0.0', version: '1.0.0' }),
    ) as KubernetesObject[];
    await applyObjects(admin, ours, { fieldManager: 'kim-bootstrapper' });
    const d = await admin.makeApiClient(AppsV1Api).readNamespacedDeployment({
      name: WEBHOOK_DEPLOYMENT,
      namespace: 'kyma-system',
    });
    const pod = d.spec!.template.spec!;
    assert.deepEqual(
      pod.containers.map((c) => [c.name, c.command]),
      [['manager', ['rtb']]],
    );
    assert.equal(d.metadata!.labels!['app.kubernetes.io/version'], '1.0.0');
    // What ours leaves unset survives the apply: why the PriorityClass and the certificate's Secret stay.
    assert.equal(pod.priorityClassName, 'rt-bootstrapper-priority-class');
    assert.ok(
      pod.volumes?.some((v) => v.secret?.secretName === 'rt-bootstrapper-webhook-cert'),
      "upstream's certificate volume is still in the Deployment",
    );

    // Our webhook's identity, with exactly the rendered RBAC.
    const webhook = await asWebhookServiceAccount(cluster);
    const { logger, lines } = recordingLogger();
    const results = await removeUpstreamLeftovers(webhook, logger);

    assert.deepEqual(
      results.map((r) => `${r.outcome}: ${r.kind} ${r.namespace ?? ''}/${r.name}`),
      [
        'removed: Service kyma-system/rt-bootstrapper-controller-manager-metrics-service',
        'not-installed: ServiceMonitor kyma-system/rt-bootstrapper-controller-manager-metrics-monitor',
        'removed: ClusterRoleBinding /rt-bootstrapper-metrics-auth-rolebinding',
        'removed: ClusterRole /rt-bootstrapper-metrics-auth-role',
        'removed: RoleBinding kyma-system/rt-bootstrapper-pod-restarter-rolebinding',
        'removed: RoleBinding istio-system/rt-bootstrapper-pod-restarter-rolebinding',
        'removed: ClusterRole /rt-bootstrapper-pod-restarter-role',
        `removed: annotation cert-manager.io/inject-ca-from of mutatingwebhookconfigurations /${MUTATING_WEBHOOK_CONFIGURATION}`,
      ],
    );
    // Every upstream object is gone exactly when it is listed; ours and the kept ones stay.
    for (const o of UPSTREAM) assert.equal(await exists(admin, o), !LISTED.has(ref(o)), ref(o));
    for (const o of ours) assert.ok(await exists(admin, o), `ours: ${ref(o)}`);
    assert.ok(
      await exists(admin, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'rt-bootstrapper-webhook-cert', namespace: 'kyma-system' },
      }),
      "upstream's certificate Secret stays",
    );
    const mwc = await objects.read<KubernetesObject>({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: MUTATING_WEBHOOK_CONFIGURATION },
    });
    assert.equal(mwc.metadata?.annotations?.['cert-manager.io/inject-ca-from'], undefined);

    // Upstream's three NetworkPolicies were updated in place by the apply, not duplicated: the
    // namespace holds exactly ours, with their rules (the scrapers' `from` included).
    // Read as raw JSON: client-node's models would rename `from`.
    const policies = await kubeRequest<{ items: V1NetworkPolicy[] }>(admin, {
      method: 'GET',
      path: '/apis/networking.k8s.io/v1/namespaces/kyma-system/networkpolicies',
    });
    const rendered = ours.filter((o) => o.kind === 'NetworkPolicy') as V1NetworkPolicy[];
    assert.deepEqual(
      policies.items.map((p) => p.metadata?.name).sort(),
      rendered.map((p) => p.metadata?.name).sort(),
    );
    for (const p of policies.items) {
      const want = rendered.find((r) => r.metadata?.name === p.metadata?.name);
      assert.equal(p.metadata?.labels?.['app.kubernetes.io/managed-by'], 'rt-bootstrapper');
      assert.deepEqual(p.spec, want?.spec);
    }

    // Each removal is logged with its reason; nothing failed.
    const removed = lines.filter((l) => l.msg.startsWith('removed '));
    assert.equal(removed.length, 7);
    for (const l of removed)
      assert.ok(typeof l.obj.reason === 'string' && l.obj.reason !== '', JSON.stringify(l.obj));
    assert.deepEqual(
      lines.filter((l) => l.level === 'warn'),
      [],
    );

    // A second pass has nothing left to do.
    const again = await removeUpstreamLeftovers(webhook, recordingLogger().logger);
    assert.deepEqual([...new Set(again.map((r) => r.outcome))].sort(), ['absent', 'not-installed']);
  });

  test("objects of the listed names that are not upstream's stay", async () => {
    const cluster = plane().cluster('runtime');
    const admin = cluster.kubeConfig();
    const core = admin.makeApiClient(CoreV1Api);
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    // A user's Service of that name selecting their own Pods.
    await core.createNamespacedService({
      namespace: 'kyma-system',
      body: {
        metadata: { name: 'rt-bootstrapper-controller-manager-metrics-service' },
        spec: { selector: { app: 'someone-else' }, ports: [{ port: 8443 }] },
      },
    });
    // A ClusterRole of that name that is ours (a later release may use upstream's name).
    await rbac.createClusterRole({
      body: {
        metadata: {
          name: 'rt-bootstrapper-pod-restarter-role',
          labels: {
            'app.kubernetes.io/name': 'rt-bootstrapper',
            'app.kubernetes.io/managed-by': 'rt-bootstrapper',
          },
        },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
      },
    });
    // A binding of that name to someone else's role.
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'rt-bootstrapper-metrics-auth-rolebinding' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'ServiceAccount', name: WEBHOOK_SERVICE_ACCOUNT, namespace: 'kyma-system' }],
      },
    });
    const webhook = await clientAs(cluster, `system:serviceaccount:kyma-system:${WEBHOOK_SERVICE_ACCOUNT}`);
    const results = await removeUpstreamLeftovers(webhook, recordingLogger().logger);
    const outcome = (kind: string, name: string): string | undefined =>
      results.find((r) => r.kind === kind && r.name === name)?.outcome;
    assert.equal(outcome('Service', 'rt-bootstrapper-controller-manager-metrics-service'), 'kept');
    assert.equal(outcome('ClusterRole', 'rt-bootstrapper-pod-restarter-role'), 'kept');
    assert.equal(outcome('ClusterRoleBinding', 'rt-bootstrapper-metrics-auth-rolebinding'), 'kept');
    await core.readNamespacedService({
      name: 'rt-bootstrapper-controller-manager-metrics-service',
      namespace: 'kyma-system',
    });
    await rbac.readClusterRole({ name: 'rt-bootstrapper-pod-restarter-role' });
    await rbac.readClusterRoleBinding({ name: 'rt-bootstrapper-metrics-auth-rolebinding' });
  });

  test('a removal that fails is logged and retried until it succeeds', async () => {
    const cluster = plane().cluster('runtime');
    const admin = cluster.kubeConfig();
    const core = admin.makeApiClient(CoreV1Api);
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    const metrics = UPSTREAM.find(
      (o) => o.kind === 'Service' && o.metadata?.name?.endsWith('-metrics-service'),
    );
    assert.ok(metrics, 'the fixture has the metrics Service');
    await core.createNamespace({ body: { metadata: { name: 'kyma-system' } } }).catch(ignore(409));
    await core
      .deleteNamespacedService({ name: metrics.metadata!.name!, namespace: 'kyma-system' })
      .catch(ignore(404));
    await KubernetesObjectApi.makeApiClient(admin).create(metrics);

    // An identity without rights yet.
    const user = 'cleanup-tester';
    const kc = await clientAs(cluster, user);
    const { logger, lines } = recordingLogger();
    const cleanup = startUpstreamCleanup(kc, logger, {
      leftovers: UPSTREAM_LEFTOVERS.filter((l) => l.kind === 'Service'),
      annotations: [],
      retry: { baseMs: 50, maxMs: 200 },
    });
    try {
      await eventually(
        () => (lines.some((l) => l.level === 'warn') ? true : undefined),
        15_000,
        'a logged failure',
      );
      assert.ok(await exists(admin, metrics), 'still there while forbidden');
      // (No controller-manager aggregates the built-in roles here, so grant it directly.)
      await rbac.createNamespacedRole({
        namespace: 'kyma-system',
        body: {
          metadata: { name: 'cleanup-tester' },
          rules: [{ apiGroups: [''], resources: ['services'], verbs: ['get', 'delete'] }],
        },
      });
      await rbac.createNamespacedRoleBinding({
        namespace: 'kyma-system',
        body: {
          metadata: { name: 'cleanup-tester' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'cleanup-tester' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
        },
      });
      const results = await cleanup.done;
      assert.deepEqual(
        results.map((r) => `${r.outcome}: ${r.name}`),
        ['removed: rt-bootstrapper-controller-manager-metrics-service'],
      );
      assert.equal(await exists(admin, metrics), false);
    } finally {
      cleanup.stop();
    }
  });
});
