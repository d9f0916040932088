// test-matrix: kubernetes
import type { KubeConfig, V1Secret } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { FIELD_MANAGER, RUNTIME_NAMESPACE, WEBHOOK_SERVICE_ACCOUNT } from '../../src/api/runtime-names.js';
import { RuntimeIdentities } from '../../src/controller/direct/runtime-identity.js';
import { eventually } from '../../src/envtest/eventually.js';
import { applyObjects } from '../../src/kube/apply.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { renderDriftWebhookConfiguration } from '../../src/render/webhook-registration.js';
import { useControlPlane } from '../support/control-plane.js';
import { asWebhookServiceAccount, bindClusterAdmin, clientAs } from '../support/kcp.js';
import {
  MANAGED_PULL_SECRET_PATH as SECRET_PATH,
  managedPullSecret as secret,
} from '../support/managed-pull-secret.js';

const plane = useControlPlane();
const cluster = () => plane().cluster('cluster-0');

/** What the API server sent the drift webhook: operation, object name, field manager, user. */
interface Seen {
  readonly operation: string;
  readonly name: string;
  readonly fieldManager: string | undefined;
  readonly user: string;
}

const WEBHOOK_USER = `system:serviceaccount:${RUNTIME_NAMESPACE}:${WEBHOOK_SERVICE_ACCOUNT}`;

describe("the drift registration: the API server calls the webhook for others' writes only", () => {
  const seen: Seen[] = [];
  let server: https.Server | undefined;
  /** The KCP's identity on this runtime (its kubeconfig's user), a tenant's, the webhook's. */
  let kcp: KubeConfig;
  let tenant: KubeConfig;
  let webhook: KubeConfig;
  let kcpUser: string | undefined;

  before(async () => {
    const ca = await createCertificateAuthority({ commonName: 'drift-registration-test' });
    const serving = await issueCertificate(ca, {
      commonName: 'drift-webhook',
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    // Records each review and allows it, as the drift webhook does.
    server = https.createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          request: {
            uid: string;
            operation: string;
            name: string;
            options?: { fieldManager?: string };
            userInfo: { username: string };
          };
        };
        const r = review.request;
        seen.push({
          operation: r.operation,
          name: r.name,
          fieldManager: r.options?.fieldManager,
          user: r.userInfo.username,
        });
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: { uid: r.uid, allowed: true },
          }),
        );
      });
    });
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const kc = cluster().kubeConfig();
    await kubeRequest(kc, {
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kyma-system' } },
    });
    for (const user of ['kcp-controller', 'tenant-admin', WEBHOOK_USER])
      await bindClusterAdmin(cluster(), user);
    kcp = await clientAs(cluster(), 'kcp-controller');
    tenant = await clientAs(cluster(), 'tenant-admin');
    webhook = await asWebhookServiceAccount(cluster());
    // As direct mode does per runtime: the user its kubeconfig is there, by a SelfSubjectReview.
    kcpUser = await new RuntimeIdentities().usernameOf(kcp);
    await applyObjects(kc, [
      secret('v0'),
      renderDriftWebhookConfiguration(
        {
          image: 'x',
          url: `https://127.0.0.1:${port}/mutate`,
          caBundlePem: ca.certPem,
          driftSkipUsername: kcpUser,
        },
        RUNTIME_NAMESPACE,
      ),
    ]);
    // The API server's informer takes a moment to see a new registration.
    await eventually(
      async () => {
        await update(kc, `probe-${seen.length}`, 'probe');
        return seen.some((s) => s.fieldManager === 'probe') ? true : undefined;
      },
      20_000,
      'the API server to call the drift webhook',
    );
  });
  after(async () => {
    const s = server;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => {
      s.close(() => {
        r();
      });
    });
  });

  test("the KCP's writes (under its user) are not sent, nor the webhook's; a tenant's under our field manager are", async () => {
    assert.equal(kcpUser, 'kcp-controller', 'the SelfSubjectReview names the kubeconfig’s user');
    seen.length = 0;
    // A rotation's or a repair's write: server-side apply under our field manager, as the KCP.
    await applyObjects(kcp, [secret('rotated')]);
    await update(kcp, 'updated-by-the-kcp', FIELD_MANAGER);
    // The webhook's own write (a pull Secret copy's), as its ServiceAccount.
    await update(webhook, 'copied-by-the-webhook', FIELD_MANAGER);
    assert.deepEqual(seen, [], 'our own writes reach the webhook');

    // A tenant naming our field manager (an apply and an update) is no less a tenant.
    await applyObjects(tenant, [secret('tampered-by-apply')]);
    await update(tenant, 'tampered', FIELD_MANAGER);
    await update(tenant, 'tampered-again', 'kubectl-edit');
    await kubeRequest(tenant, { method: 'DELETE', path: SECRET_PATH });
    assert.deepEqual(seen, [
      {
        operation: 'UPDATE',
        name: 'registry-credentials',
        fieldManager: FIELD_MANAGER,
        user: 'tenant-admin',
      },
      {
        operation: 'UPDATE',
        name: 'registry-credentials',
        fieldManager: FIELD_MANAGER,
        user: 'tenant-admin',
      },
      {
        operation: 'UPDATE',
        name: 'registry-credentials',
        fieldManager: 'kubectl-edit',
        user: 'tenant-admin',
      },
      { operation: 'DELETE', name: 'registry-credentials', fieldManager: undefined, user: 'tenant-admin' },
    ]);
  });

  test("the KCP's delete is not sent either", async () => {
    await applyObjects(kcp, [secret('back')]);
    seen.length = 0;
    await kubeRequest(kcp, { method: 'DELETE', path: SECRET_PATH });
    assert.deepEqual(seen, []);
  });

  test('without a KCP user (KIM, rtb render webhook) only the webhook’s own writes are skipped', () => {
    const rendered = renderDriftWebhookConfiguration({ image: 'x' }, RUNTIME_NAMESPACE);
    assert.deepEqual(rendered.webhooks?.[0]?.matchConditions, [
      { name: 'not-rt-bootstrapper-writes', expression: `request.userInfo.username != "${WEBHOOK_USER}"` },
    ]);
  });

  /** A read and a PUT of the Secret with `value`, under `fieldManager`, as `kc`'s user. */
  async function update(kc: KubeConfig, value: string, fieldManager: string): Promise<void> {
    const current = await kubeRequest<V1Secret>(kc, { method: 'GET', path: SECRET_PATH });
    await kubeRequest(kc, {
      method: 'PUT',
      path: SECRET_PATH,
      query: { fieldManager },
      body: { ...current, data: secret(value).data },
    });
  }
});
