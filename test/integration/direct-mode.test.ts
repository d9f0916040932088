// test-matrix: kubernetes
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  RbacAuthorizationV1Api,
  type KubernetesObject,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { kubeRequest } from '../../src/kube/kube-request.js';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_TLS_SECRET,
} from '../../src/api/runtime-names.js';
import { renderWebhookManifests } from '../../src/render/webhook-manifests.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { seedConfigText } from '../support/fixtures.js';
import { DirectFleet, conditionOf as condition } from '../support/direct-fleet.js';
import {
  CTB_NAME,
  RB_PATH,
  bindClusterAdmin,
  coreOf,
  kubeconfigFor,
  markDeploymentAvailable,
  putKcpConfig,
  putKubeconfigSecret,
  putPullSecret,
} from '../support/kcp.js';
import { registerWebhook, startTestWebhook } from '../support/webhook.js';
import { listTrustBundles, readTrustBundle } from '../support/trust-bundles.js';
import { apiServerMetric } from '../support/apiserver-metrics.js';
import { CONTENT_VERSION_ANNOTATION, runtimeSetVersion } from '../../src/api/set-version.js';

const RUNTIMES = ['rt-1', 'rt-2', 'rt-3'] as const;
const plane = useControlPlane({ clusters: ['kcp', ...RUNTIMES] });
const SET_VERSION = 'rt-bootstrapper.kyma-project.io/set-version';

const kcp = () => plane().cluster('kcp');
const rt = (id: string) => plane().cluster(id);
const fleet = new DirectFleet(kcp);
const { readRb } = fleet;
const waitState = (id: string, state: string, timeoutMs?: number) => fleet.waitState(id, state, timeoutMs);

async function runtimeSecretAuth(id: string): Promise<string | undefined> {
  const s = await coreOf(rt(id)).readNamespacedSecret({
    name: 'registry-credentials',
    namespace: 'kyma-system',
  });
  const json = JSON.parse(Buffer.from(s.data?.['.dockerconfigjson'] ?? '', 'base64').toString()) as {
    auths: Record<string, { auth: string }>;
  };
  return json.auths['ghcr.io']?.auth;
}

/** Waits until runtime `id`'s pull Secret carries `auth`. */
async function waitSecretAuth(id: string, auth: string, timeoutMs: number, what: string): Promise<void> {
  await eventually(async () => ((await runtimeSecretAuth(id)) === auth ? true : undefined), timeoutMs, what);
}

const SET_RESOURCES = ['namespaces', 'clustertrustbundles', 'secrets', 'configmaps'] as const;

/** The set's objects on runtime `id`: trust bundle, pull Secret, config ConfigMap. */
async function setObjectsOn(id: string) {
  const ctb = await readTrustBundle(rt(id).kubeConfig(), CTB_NAME);
  assert.ok(ctb, `${id}: the ClusterTrustBundle`);
  const secret = await coreOf(rt(id)).readNamespacedSecret({
    name: 'registry-credentials',
    namespace: 'kyma-system',
  });
  const cm = await coreOf(rt(id)).readNamespacedConfigMap({
    name: 'rt-bootstrapper-config',
    namespace: 'kyma-system',
  });
  return { ctb, secret, cm };
}

/** Server-side applies runtime `id`'s API server answered, per resource of the set. */
async function appliesOn(id: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const resource of SET_RESOURCES)
    out[resource] = await apiServerMetric(rt(id), 'apiserver_request_total', { verb: 'APPLY', resource });
  return out;
}

/** Replaces the KCP's webhook ConfigMap with `configText`. */
const putConfig = (configText: string): Promise<void> => putKcpConfig(kcp(), configText);

/** Sets `spec.paused` of RuntimeBootstrapper `id`. */
async function setPaused(id: string, paused: boolean): Promise<void> {
  await kubeRequest(kcp().kubeConfig(), {
    method: 'PATCH',
    path: `${RB_PATH}/${id}`,
    body: { spec: { paused } },
  });
}

describe('direct mode: RuntimeBootstrappers install, sync and remove the webhook on runtimes', () => {
  before(async () => {
    await fleet.prepare({ 'rt-1': rt('rt-1'), 'rt-3': rt('rt-3') });
    // rt-2 uses an identity bound by RBAC, so its rotation can be proven by revoking the old one.
    await bindClusterAdmin(rt('rt-2'), 'rtb-old');
    await putKubeconfigSecret(kcp(), 'rt-2', await kubeconfigFor(rt('rt-2'), 'rtb-old'));
    await fleet.start({ runtimeTimeoutMs: 3_000 });
  });
  after(() => fleet.stop());

  test('creating a CR installs the webhook set; the status walks to Ready once the Deployment is available', async () => {
    for (const id of RUNTIMES) await fleet.create(id);
    for (const id of RUNTIMES) {
      const installing = await waitState(id, 'Installing');
      assert.equal(condition(installing, 'RuntimeReachable')?.status, 'True');
      assert.equal(condition(installing, 'ConfigurationSynced')?.status, 'True');
      assert.equal(condition(installing, 'Installed')?.status, 'True');
      assert.equal(condition(installing, 'WebhookReady')?.status, 'False');
      assert.ok(installing.metadata.finalizers?.includes('rt-bootstrapper.kyma-project.io/cleanup'));
      const apps = rt(id).kubeConfig().makeApiClient(AppsV1Api);
      const d = await apps.readNamespacedDeployment({
        name: WEBHOOK_DEPLOYMENT,
        namespace: 'kyma-system',
      });
      assert.equal(d.spec?.template.spec?.containers[0]?.image, 'example.com/rt-bootstrapper:1.0.0');
      // No registration before its backend is available.
      const hooks = rt(id).kubeConfig().makeApiClient(AdmissionregistrationV1Api);
      await assert.rejects(
        hooks.readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION }),
        /404|not found/i,
      );
      await markDeploymentAvailable(rt(id));
    }
    for (const id of RUNTIMES) {
      const ready = await waitState(id, 'Ready');
      const status = ready.status;
      assert.ok(status);
      assert.equal(status.appliedVersion, fleet.sources.snapshot().version);
      assert.equal(status.observedGeneration, ready.metadata.generation);
      const hooks = rt(id).kubeConfig().makeApiClient(AdmissionregistrationV1Api);
      const mwc = await hooks.readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
      assert.ok(
        mwc.webhooks?.[0]?.clientConfig.caBundle,
        'registered with the CA of its serving certificate',
      );
      const tls = await coreOf(rt(id)).readNamespacedSecret({
        name: WEBHOOK_TLS_SECRET,
        namespace: 'kyma-system',
      });
      assert.ok(tls.data?.['tls.crt']);
      // resourceVersions grow with every write in a cluster: they show the order of the writes,
      // trust bundle, then pull Secret, then the config that names them.
      const { ctb, secret, cm } = await setObjectsOn(id);
      const rv = (o: { metadata?: { resourceVersion?: string } }) => Number(o.metadata?.resourceVersion);
      assert.ok(
        rv(ctb) < rv(secret) && rv(secret) < rv(cm),
        `order: ctb ${rv(ctb)} < secret ${rv(secret)} < configmap ${rv(cm)}`,
      );
    }
  });

  test('rotating the pull Secret reaches every runtime as one write, and the runtime names the new set', async () => {
    const previous = fleet.sources.snapshot().version;
    const appliesBefore = new Map<string, Record<string, number>>();
    for (const id of RUNTIMES) appliesBefore.set(id, await appliesOn(id));
    const bundleBefore = new Map<string, string | undefined>();
    const configBefore = new Map<string, string | undefined>();
    for (const id of RUNTIMES) {
      const { ctb, cm } = await setObjectsOn(id);
      bundleBefore.set(id, ctb.metadata?.resourceVersion);
      configBefore.set(id, cm.metadata?.resourceVersion);
    }
    await putPullSecret(kcp(), 'v2');
    const version = await fleet.nextVersion(previous);
    for (const id of RUNTIMES) {
      await waitSecretAuth(id, 'v2', 20_000, `${id} to get the new Secret`);
      await fleet.waitFor(id, (rb) => rb.status?.appliedVersion === version, 20_000, `${id} status`);
      const { ctb, secret, cm } = await setObjectsOn(id);
      // Each object carries its own content's version, none the set's; from them the runtime
      // computes the set it holds, and the bundle and the ConfigMap, unchanged, were not written again.
      for (const o of [secret, ctb, cm]) {
        assert.equal(o.metadata?.annotations?.[SET_VERSION], undefined);
        assert.match(o.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION] ?? '', /^[0-9a-f]{16}$/);
      }
      assert.equal(
        runtimeSetVersion({
          configMap: cm.metadata?.annotations,
          pullSecret: secret.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION],
          trustBundle: ctb.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION],
        }),
        version,
        `${id}: the set its objects name`,
      );
      assert.equal(ctb.metadata?.resourceVersion, bundleBefore.get(id), `${id}: the bundle untouched`);
      assert.equal(cm.metadata?.resourceVersion, configBefore.get(id), `${id}: the ConfigMap untouched`);
      // One write of the changed object, as the runtime's API server counts them, and where the
      // runtime serves the admission policy its parameters, which stamp Pods with the set's version.
      const before = appliesBefore.get(id) ?? {};
      const after = await appliesOn(id);
      const policy = (await fleet.readRb(id)).status?.admissionPolicyAPI === undefined ? 0 : 1;
      assert.deepEqual(
        Object.fromEntries(SET_RESOURCES.map((r) => [r, (after[r] ?? 0) - (before[r] ?? 0)])),
        { namespaces: 0, clustertrustbundles: 0, secrets: 1, configmaps: policy },
        `${id}: server-side applies of the rotation`,
      );
    }
  });

  test('a ConfigMap change arrives everywhere and the webhook on that runtime applies it', async () => {
    const hook = await startTestWebhook(rt('rt-1'));
    try {
      const manifests = renderWebhookManifests({ image: 'x', url: hook.url, caBundlePem: hook.ca.certPem });
      await registerWebhook(rt('rt-1'), {
        ...manifests.mutatingWebhookConfiguration,
        metadata: { name: 'test-direct-webhook' },
      });
      const config = JSON.parse(seedConfigText()) as { overrides: Record<string, string> };
      config.overrides = { 'replace.me': 'mirror.example.com/via-kcp' };
      await putConfig(JSON.stringify(config));
      for (const id of RUNTIMES) {
        await eventually(
          async () => {
            const cm = await coreOf(rt(id)).readNamespacedConfigMap({
              name: 'rt-bootstrapper-config',
              namespace: 'kyma-system',
            });
            return cm.data?.['rt-bootstrapper-config.json']?.includes('via-kcp') ? true : undefined;
          },
          20_000,
          `${id} to get the new config`,
        );
      }
      let n = 0;
      await eventually(
        async () => {
          const pod = await coreOf(rt('rt-1')).createNamespacedPod({
            namespace: 'default',
            dryRun: 'All',
            body: {
              metadata: {
                name: `p${n++}`,
                annotations: { 'rt-cfg.kyma-project.io/alter-img-registry': 'true' },
              },
              spec: { containers: [{ name: 'c', image: 'replace.me/app:1' }] },
            },
          });
          return pod.spec?.containers[0]?.image === 'mirror.example.com/via-kcp/app:1' ? true : undefined;
        },
        20_000,
        'the webhook on rt-1 to apply the config from the KCP',
      );
    } finally {
      await hook.stop();
    }
  });

  test('an unreachable runtime marks only its own CR as failing, and recovers when it is back', async () => {
    await rt('rt-3').stop();
    await putPullSecret(kcp(), 'v3');
    const failing = await waitState('rt-3', 'Error');
    assert.equal(condition(failing, 'RuntimeReachable')?.status, 'False');
    assert.match(condition(failing, 'RuntimeReachable')?.message ?? '', /unreachable/);
    for (const id of ['rt-1', 'rt-2']) {
      await waitSecretAuth(id, 'v3', 20_000, `${id} unaffected`);
      assert.equal((await waitState(id, 'Ready')).status?.state, 'Ready');
    }
    await rt('rt-3').start();
    await waitSecretAuth('rt-3', 'v3', 60_000, 'rt-3 to catch up');
    await waitState('rt-3', 'Ready', 60_000);
  });

  test('a rotated kubeconfig Secret is used at once', async () => {
    await bindClusterAdmin(rt('rt-2'), 'rtb-new');
    await putKubeconfigSecret(kcp(), 'rt-2', await kubeconfigFor(rt('rt-2'), 'rtb-new'));
    // Revoke the old identity at once: from now on only the new credentials can write.
    await rt('rt-2')
      .kubeConfig()
      .makeApiClient(RbacAuthorizationV1Api)
      .deleteClusterRoleBinding({ name: 'test-rtb-old' });
    await putPullSecret(kcp(), 'v4');
    await waitSecretAuth('rt-2', 'v4', 30_000, 'rt-2 written with the new credentials');
    assert.equal((await waitState('rt-2', 'Ready')).status?.state, 'Ready');
  });

  test('paused: no writes at all, then it catches up when unpaused', async () => {
    await setPaused('rt-1', true);
    await waitState('rt-1', 'Paused');
    await putPullSecret(kcp(), 'v5');
    await waitSecretAuth('rt-3', 'v5', 20_000, 'the others to move on');
    const before = await coreOf(rt('rt-1')).listSecretForAllNamespaces();
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(await runtimeSecretAuth('rt-1'), 'v4', 'the paused runtime kept the old Secret');
    const afterList = await coreOf(rt('rt-1')).listSecretForAllNamespaces();
    assert.equal(afterList.metadata?.resourceVersion !== undefined, true);
    assert.deepEqual(
      afterList.items.map((s) => s.metadata?.resourceVersion),
      before.items.map((s) => s.metadata?.resourceVersion),
      'no Secret on the paused runtime was written',
    );
    await setPaused('rt-1', false);
    await waitSecretAuth('rt-1', 'v5', 20_000, 'rt-1 to catch up');
  });

  test('an inconsistent source set is not propagated and every CR says why', async () => {
    const config = JSON.parse(seedConfigText()) as { clusterTrustBundle: { name: string } };
    config.clusterTrustBundle.name = 'no-such.example.com:ctb:9';
    await putConfig(JSON.stringify(config));
    for (const id of RUNTIMES) {
      const rb = await fleet.waitCondition(
        id,
        'ConfigurationSynced',
        { reason: 'InconsistentSources' },
        20_000,
      );
      assert.match(condition(rb, 'ConfigurationSynced')?.message ?? '', /no-such\.example\.com:ctb:9/);
      const cm = await coreOf(rt(id)).readNamespacedConfigMap({
        name: 'rt-bootstrapper-config',
        namespace: 'kyma-system',
      });
      assert.ok(!cm.data?.['rt-bootstrapper-config.json']?.includes('no-such'), 'nothing propagated');
    }
    await putConfig(seedConfigText());
    for (const id of RUNTIMES) await waitState(id, 'Ready');
  });

  test('a new webhook release rolls every runtime forward', async () => {
    await fleet.restart({
      release: { image: 'example.com/rt-bootstrapper:1.1.0', version: '1.1.0' },
      runtimeTimeoutMs: 3_000,
    });
    await Promise.all(
      RUNTIMES.map(async (id) => {
        const apps = rt(id).kubeConfig().makeApiClient(AppsV1Api);
        await eventually(
          async () => {
            const d = await apps.readNamespacedDeployment({
              name: WEBHOOK_DEPLOYMENT,
              namespace: 'kyma-system',
            });
            return d.spec?.template.spec?.containers[0]?.image === 'example.com/rt-bootstrapper:1.1.0'
              ? true
              : undefined;
          },
          20_000,
          `${id} to get the new image`,
        );
        // The new generation is not rolled out until the Deployment reports it.
        await waitState(id, 'Installing');
        await markDeploymentAvailable(rt(id));
        const ready = await waitState(id, 'Ready');
        assert.equal(ready.status?.webhookVersion, '1.1.0');
      }),
    );
  });

  test('deleting a CR removes everything from the runtime, the webhook configuration first, then releases the finalizer', async () => {
    const runtime = rt('rt-3');
    const deletions: string[] = [];
    const { Watch } = await import('@kubernetes/client-node');
    const watch = new Watch(runtime.kubeConfig());
    const aborts: AbortController[] = [];
    for (const path of [
      '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
      '/apis/apps/v1/namespaces/kyma-system/deployments',
    ]) {
      aborts.push(
        await watch.watch(
          path,
          {},
          (type, obj: KubernetesObject) => {
            if (type === 'DELETED') deletions.push(obj.kind ?? path);
          },
          () => undefined,
        ),
      );
    }
    // A copy of the pull Secret made by the webhook in some namespace is ours too.
    await coreOf(runtime).createNamespace({ body: { metadata: { name: 'team-a' } } });
    await coreOf(runtime).createNamespacedSecret({
      namespace: 'team-a',
      body: {
        metadata: {
          name: 'registry-credentials',
          labels: { 'app.kubernetes.io/managed-by': 'rt-bootstrapper' },
        },
        data: { a: 'Yg==' },
      },
    });
    await kubeRequest(kcp().kubeConfig(), { method: 'DELETE', path: `${RB_PATH}/rt-3` });
    await eventually(
      async () => {
        try {
          await readRb('rt-3');
          return undefined;
        } catch {
          return true;
        }
      },
      30_000,
      'the CR to be gone (finalizer released)',
    );
    for (const a of aborts) a.abort();
    const core = coreOf(runtime);
    const secrets = await core.listSecretForAllNamespaces({
      labelSelector: 'app.kubernetes.io/managed-by=rt-bootstrapper',
    });
    assert.deepEqual(
      secrets.items.map((s) => `${s.metadata?.namespace}/${s.metadata?.name}`),
      [],
    );
    const maps = await core.listConfigMapForAllNamespaces({
      labelSelector: 'app.kubernetes.io/managed-by=rt-bootstrapper',
    });
    assert.equal(maps.items.length, 0);
    const apps = runtime.kubeConfig().makeApiClient(AppsV1Api);
    assert.equal((await apps.listNamespacedDeployment({ namespace: 'kyma-system' })).items.length, 0);
    assert.deepEqual(await listTrustBundles(runtime.kubeConfig()), []);
    assert.deepEqual(
      deletions.slice(0, 2),
      ['MutatingWebhookConfiguration', 'Deployment'],
      `deletion order: ${deletions.join(', ')}`,
    );
    // The others are untouched.
    assert.equal((await waitState('rt-1', 'Ready')).status?.state, 'Ready');
  });
});
