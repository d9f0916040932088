import { CoreV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyObjects } from '../../src/kube/apply.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { seedConfigText } from '../support/fixtures.js';
import { asWebhookServiceAccount } from '../support/kcp.js';
import { startTestWebhook } from '../support/webhook.js';
import { unregisteredWebhookObjects } from '../support/webhook-runtime.js';

const plane = useControlPlane({ clusters: ['runtime'] });

describe('the rendered runtime manifests on a real API server', () => {
  test('apply cleanly, and the webhook works with exactly the rendered RBAC and no more', async () => {
    const cluster = plane().cluster('runtime');
    const admin = cluster.kubeConfig();
    // Everything but the registration (it would point at nothing here).
    await applyObjects(admin, unregisteredWebhookObjects());
    const core = admin.makeApiClient(CoreV1Api);
    // A pull Secret's type (the Secret policy lets the ServiceAccount copy no other).
    const pullData = { '.dockerconfigjson': Buffer.from('{"auths":{}}').toString('base64') };
    await core.createNamespacedSecret({
      namespace: 'kyma-system',
      body: {
        metadata: { name: 'registry-credentials' },
        type: 'kubernetes.io/dockerconfigjson',
        data: pullData,
      },
    });
    await core.createNamespacedSecret({
      namespace: 'kyma-system',
      body: { metadata: { name: 'someone-elses' }, data: { a: 'Yg==' } },
    });
    await core.createNamespacedConfigMap({
      namespace: 'kyma-system',
      body: {
        metadata: { name: 'rt-bootstrapper-config' },
        data: { 'rt-bootstrapper-config.json': seedConfigText() },
      },
    });

    const sa = await asWebhookServiceAccount(cluster);
    const saCore = sa.makeApiClient(CoreV1Api);
    await assert.rejects(
      saCore.readNamespacedSecret({ name: 'someone-elses', namespace: 'kyma-system' }),
      /403|forbidden/i,
    );
    await assert.rejects(saCore.listNamespacedSecret({ namespace: 'kyma-system' }), /403|forbidden/i);
    await assert.rejects(saCore.listNamespacedConfigMap({ namespace: 'kube-system' }), /403|forbidden/i);

    const hook = await startTestWebhook(cluster, { kubeConfig: sa });
    try {
      await core.createNamespace({ body: { metadata: { name: 'rbac-check' } } });
      const copy = await eventually(
        async () =>
          (await core.readNamespacedSecret({ name: 'registry-credentials', namespace: 'rbac-check' })).data,
        15_000,
        'the copier to work under the ServiceAccount',
      );
      assert.deepEqual(copy, pullData);
    } finally {
      await hook.stop();
    }
  });
});
