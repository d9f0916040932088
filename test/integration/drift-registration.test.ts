// test-matrix: kubernetes
import type { V1Secret } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { FIELD_MANAGER } from '../../src/api/runtime-names.js';
import { eventually } from '../../src/envtest/eventually.js';
import { applyObjects } from '../../src/kube/apply.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { renderDriftWebhookConfiguration } from '../../src/render/webhook-registration.js';
import { useControlPlane } from '../support/control-plane.js';
import {
  MANAGED_PULL_SECRET_PATH as SECRET_PATH,
  managedPullSecret as secret,
} from '../support/managed-pull-secret.js';

const plane = useControlPlane();
const cluster = () => plane().cluster('cluster-0');

/** What the API server sent the drift webhook: operation, object name, field manager. */
interface Seen {
  readonly operation: string;
  readonly name: string;
  readonly fieldManager: string | undefined;
}

describe("the drift registration: the API server calls the webhook for others' writes only", () => {
  const seen: Seen[] = [];
  let server: https.Server | undefined;

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
          request: { uid: string; operation: string; name: string; options?: { fieldManager?: string } };
        };
        const r = review.request;
        seen.push({ operation: r.operation, name: r.name, fieldManager: r.options?.fieldManager });
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
    await applyObjects(kc, [
      secret('v0'),
      renderDriftWebhookConfiguration(
        { image: 'x', url: `https://127.0.0.1:${port}/mutate`, caBundlePem: ca.certPem },
        'kyma-system',
      ),
    ]);
    // The API server's informer takes a moment to see a new registration.
    await eventually(
      async () => {
        await update(`probe-${seen.length}`, 'probe');
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

  test("the controller's applies are not sent; another writer's update and every delete are", async () => {
    seen.length = 0;
    const kc = cluster().kubeConfig();
    // A rotation's or a repair's write: server-side apply under our field manager.
    await applyObjects(kc, [secret('rotated')]);
    // Our field manager on a plain update as well.
    await update('updated-by-us', FIELD_MANAGER);
    assert.deepEqual(seen, [], 'our own writes reach the webhook');
    await update('tampered', 'kubectl-edit');
    await kubeRequest(kc, { method: 'DELETE', path: SECRET_PATH });
    assert.deepEqual(seen, [
      { operation: 'UPDATE', name: 'registry-credentials', fieldManager: 'kubectl-edit' },
      { operation: 'DELETE', name: 'registry-credentials', fieldManager: undefined },
    ]);
  });

  /** A read and a PUT of the Secret with `value`, under `fieldManager`. */
  async function update(value: string, fieldManager: string): Promise<void> {
    const kc = cluster().kubeConfig();
    const current = await kubeRequest<V1Secret>(kc, { method: 'GET', path: SECRET_PATH });
    await kubeRequest(kc, {
      method: 'PUT',
      path: SECRET_PATH,
      query: { fieldManager },
      body: { ...current, data: secret(value).data },
    });
  }
});
