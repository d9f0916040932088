/**
 * A rename of the pull Secret in the configuration, on a real API server: the webhook runs with
 * its ServiceAccount's identity (cluster-admin here: the rendered RBAC is
 * ./webhook-least-privilege.test.ts's) under the rendered Secret policy, which the renamed-copy
 * sweep relies on to refuse deleting a Secret that is not our copy; the policy is rendered
 * again with the new name, as the KCP does.
 */
import { CoreV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../../src/envtest/eventually.js';
import { COPIED_FROM_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../src/api/managed-labels.js';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { applyObjects } from '../../src/kube/apply.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { renderWebhookSecretPolicy, WEBHOOK_SECRET_POLICY } from '../../src/render/webhook-secret-policy.js';
import { webhookUserName } from '../../src/render/webhook-write-policy.js';
import { RENAMED_COPIES_KEY } from '../../src/runtime-agent/pull-secret/renamed-copy-sweeper.js';
import { useControlPlane } from '../support/control-plane.js';
import { seedConfigText } from '../support/fixtures.js';
import { asWebhookServiceAccount, bindClusterAdmin } from '../support/kcp.js';
import { startTestWebhook, type TestWebhook } from '../support/webhook.js';
import { podNamingPullSecret } from '../support/pull-secret-user.js';

const plane = useControlPlane({ clusters: ['runtime'] });
let core: CoreV1Api;
let webhook: TestWebhook | undefined;
let sa: KubeConfig;
let admin: KubeConfig;

const configNaming = (name: string): string => {
  const config = JSON.parse(seedConfigText()) as Record<string, unknown>;
  config.imagePullSecret = { name, namespace: 'kyma-system' };
  return JSON.stringify(config);
};

async function setConfig(name: string): Promise<void> {
  await core.replaceNamespacedConfigMap({
    name: 'rt-bootstrapper-config',
    namespace: 'kyma-system',
    body: {
      metadata: { name: 'rt-bootstrapper-config' },
      data: { 'rt-bootstrapper-config.json': configNaming(name) },
    },
  });
}

/** Whether `namespace/name` exists now. */
async function exists(namespace: string, name: string): Promise<boolean> {
  try {
    await core.readNamespacedSecret({ name, namespace });
    return true;
  } catch (error) {
    if (String(error).includes('404') || (error as { code?: number }).code === 404) return false;
    throw error;
  }
}

const start = (): Promise<TestWebhook> =>
  startTestWebhook(plane().cluster('runtime'), {
    kubeConfig: sa,
    statusConfigMap: { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP },
    renamedCopyResweepMs: 500,
  });

/**
 * Applies the Secret policy rendered for pull Secret `name` and waits until the API server
 * enforces it: the ServiceAccount's create of a Secret of another name is refused.
 */
async function secretPolicyFor(name: string): Promise<void> {
  const { policy, binding } = renderWebhookSecretPolicy(RUNTIME_NAMESPACE, name, 'own', {});
  await applyObjects(admin, [policy, binding] as KubernetesObject[]);
  const other = name === 'old-creds' ? 'new-creds' : 'old-creds';
  await eventually(
    async () => {
      try {
        await kubeRequest(sa, {
          method: 'POST',
          path: '/api/v1/namespaces/probe/secrets',
          query: { dryRun: 'All' },
          body: {
            metadata: { name: other },
            type: 'kubernetes.io/dockerconfigjson',
            data: { '.dockerconfigjson': 'e30=' },
          },
        });
        return undefined;
      } catch (error) {
        return statusCodeOf(error) === 403 && String(error).includes(WEBHOOK_SECRET_POLICY)
          ? true
          : undefined;
      }
    },
    15_000,
    `the Secret policy for ${name} in force`,
  );
}

describe('a rename of the pull Secret on a real API server', () => {
  before(async () => {
    const cluster = plane().cluster('runtime');
    admin = cluster.kubeConfig();
    core = admin.makeApiClient(CoreV1Api);
    await bindClusterAdmin(cluster, webhookUserName(RUNTIME_NAMESPACE));
    sa = await asWebhookServiceAccount(cluster);
    await core.createNamespace({ body: { metadata: { name: 'kyma-system' } } });
    for (const name of ['old-creds', 'new-creds'])
      await core.createNamespacedSecret({
        namespace: 'kyma-system',
        body: {
          metadata: { name },
          type: 'kubernetes.io/dockerconfigjson',
          data: { '.dockerconfigjson': Buffer.from(`{"auths":{"${name}.example":{}}}`).toString('base64') },
        },
      });
    await core.createNamespacedConfigMap({
      namespace: 'kyma-system',
      body: {
        metadata: { name: 'rt-bootstrapper-config' },
        data: { 'rt-bootstrapper-config.json': configNaming('old-creds') },
      },
    });
    for (const name of ['free', 'in-use', 'foreign'])
      await core.createNamespace({ body: { metadata: { name } } });
    // Secrets of both names that are not ours, there before the webhook: never touched, never written over.
    for (const name of ['old-creds', 'new-creds'])
      await core.createNamespacedSecret({
        namespace: 'foreign',
        body: { metadata: { name, labels: { app: 'theirs' } }, data: { mine: 'eA==' } },
      });
    await core.createNamespace({ body: { metadata: { name: 'probe' } } });
    await secretPolicyFor('old-creds');
    webhook = await start();
  });

  after(async () => {
    await webhook?.stop();
  });

  test('copies of the earlier name go from every namespace, but those a live Pod names and those not ours', async () => {
    for (const ns of ['free', 'in-use'])
      await eventually(
        async () => ((await exists(ns, 'old-creds')) ? true : undefined),
        15_000,
        `a copy in ${ns}`,
      );
    // A Pod that names the old copy (no node here: it stays Pending, which is live).
    await core.createNamespacedPod({
      namespace: 'in-use',
      body: podNamingPullSecret('old-pod', 'old-creds'),
    });

    // The KCP renders the policy again with the new name, then the configuration follows.
    await secretPolicyFor('new-creds');
    await setConfig('new-creds');
    for (const ns of ['free', 'in-use'])
      await eventually(
        async () => ((await exists(ns, 'new-creds')) ? true : undefined),
        15_000,
        `the new copy in ${ns}`,
      );
    await eventually(
      async () => ((await exists('free', 'old-creds')) ? undefined : true),
      15_000,
      'the copy of the earlier name to go',
    );
    assert.equal(await exists('in-use', 'old-creds'), true, 'kept while a live Pod names it');
    const foreign = await core.readNamespacedSecret({ name: 'old-creds', namespace: 'foreign' });
    assert.equal(foreign.metadata?.labels?.app, 'theirs', 'a Secret that is not ours stays');
    const foreignNew = await core.readNamespacedSecret({ name: 'new-creds', namespace: 'foreign' });
    assert.deepEqual(foreignNew.data, { mine: 'eA==' });
    assert.equal(await exists('kyma-system', 'old-creds'), true, 'the source itself is never a copy');

    await core.deleteNamespacedPod({ name: 'old-pod', namespace: 'in-use', gracePeriodSeconds: 0 });
    await eventually(
      async () => ((await exists('in-use', 'old-creds')) ? undefined : true),
      15_000,
      'the kept copy to go once no live Pod names it',
    );
    // No copy of the earlier name left anywhere: the record keeps the name in force alone.
    await eventually(
      async () => {
        const cm = await core.readNamespacedConfigMap({
          name: WEBHOOK_STATUS_CONFIG_MAP,
          namespace: RUNTIME_NAMESPACE,
        });
        return cm.data?.[RENAMED_COPIES_KEY] === 'new-creds' ? true : undefined;
      },
      15_000,
      'the earlier name forgotten in the record',
    );
  });

  test('after a restart, the earlier names it recorded are swept: a copy left behind is removed', async () => {
    await webhook?.stop();
    webhook = undefined;
    // What a webhook stopped during a rename leaves: a copy of the earlier name, ours by label,
    // and that name in its record (a key of the status ConfigMap).
    await core.createNamespacedSecret({
      namespace: 'free',
      body: {
        metadata: {
          name: 'old-creds',
          labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
          annotations: { [COPIED_FROM_ANNOTATION]: 'kyma-system/old-creds' },
        },
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': Buffer.from('{"auths":{}}').toString('base64') },
      },
    });
    await kubeRequest(admin, {
      method: 'PATCH',
      path: `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/${WEBHOOK_STATUS_CONFIG_MAP}`,
      contentType: 'application/merge-patch+json',
      body: { data: { [RENAMED_COPIES_KEY]: 'new-creds\nold-creds' } },
    });
    webhook = await start();
    await eventually(
      async () => ((await exists('free', 'old-creds')) ? undefined : true),
      15_000,
      'the leftover copy to go after the restart',
    );
    assert.equal(await exists('free', 'new-creds'), true);
  });
});
