// test-matrix: kubernetes
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  VersionApi,
  type V1Pod,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { KUBERNETES_VERSIONS } from '../../src/envtest/kubernetes-versions.js';
import { sweepOrphans } from '../../src/envtest/process-registry.js';
import { isRunning, useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';

const plane = useControlPlane({ clusters: ['kcp', 'runtime-a'] });

const pod = (name: string, extra: Partial<V1Pod['spec']> = {}): V1Pod => ({
  metadata: { name },
  spec: { containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10' }], ...extra },
});

describe('the local control plane', () => {
  test('serves the pinned Kubernetes version', async () => {
    const info = await plane().cluster('kcp').kubeConfig().makeApiClient(VersionApi).getCode();
    assert.equal(info.gitVersion, plane().binaries.kubernetesVersion);
    assert.match(info.gitVersion, /^v1\.(3[4-9]|[4-9]\d)\.\d+$/);
    assert.equal(`${info.major}.${info.minor}`, plane().kubernetes);
  });

  test('the kubeconfig works with kubectl (of the newest pinned release)', async () => {
    const { kubectl } = plane().binaries;
    assert.ok(kubectl, 'kubectl is built with the control plane');
    const { stdout: out } = await promisify(execFile)(kubectl, [
      '--kubeconfig',
      plane().cluster('kcp').kubeconfigPath,
      'get',
      'namespaces',
      '-o',
      'name',
    ]);
    assert.match(out, /^namespace\/default$/m);
    assert.match(out, /^namespace\/kube-system$/m);
  });

  test('two clusters on one etcd do not see each other', async () => {
    const kcp = plane().cluster('kcp').kubeConfig().makeApiClient(CoreV1Api);
    const rt = plane().cluster('runtime-a').kubeConfig().makeApiClient(CoreV1Api);
    await kcp.createNamespace({ body: { metadata: { name: 'only-on-kcp' } } });
    await kcp.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'kcp-only' }, data: { a: 'b' } },
    });
    const kcpNames = (await kcp.listNamespace()).items.map((n) => n.metadata?.name);
    const rtNames = (await rt.listNamespace()).items.map((n) => n.metadata?.name);
    assert.ok(kcpNames.includes('only-on-kcp'));
    assert.ok(!rtNames.includes('only-on-kcp'));
    await assert.rejects(
      rt.readNamespacedConfigMap({ name: 'kcp-only', namespace: 'default' }),
      /404|not found/i,
    );
  });

  test('a ClusterTrustBundle can be created and read back (in the API version the minor serves)', async () => {
    const ca = await createCertificateAuthority({ commonName: 'bundle-test' });
    const version = KUBERNETES_VERSIONS[plane().kubernetes].clusterTrustBundleApi;
    const api = plane().cluster('runtime-a').kubeConfig().makeApiClient(CustomObjectsApi);
    const where = { group: 'certificates.k8s.io', version, plural: 'clustertrustbundles' };
    await api.createClusterCustomObject({
      ...where,
      body: {
        apiVersion: `certificates.k8s.io/${version}`,
        kind: 'ClusterTrustBundle',
        metadata: { name: 'rt-test.example.com:ctb:1' },
        spec: { signerName: 'rt-test.example.com/ctb', trustBundle: ca.certPem },
      },
    });
    const back = (await api.getClusterCustomObject({ ...where, name: 'rt-test.example.com:ctb:1' })) as {
      spec: { signerName: string; trustBundle: string };
    };
    assert.equal(back.spec.signerName, 'rt-test.example.com/ctb');
    assert.equal(back.spec.trustBundle.trim(), ca.certPem.trim());
  });

  test('a projected clusterTrustBundle volume source survives create (the feature gates are on)', async () => {
    const api = plane().cluster('runtime-a').kubeConfig().makeApiClient(CoreV1Api);
    const created = await api.createNamespacedPod({
      namespace: 'default',
      body: pod('ctb-projection', {
        volumes: [
          {
            name: 'rt-bootstrapper-certs',
            projected: {
              defaultMode: 420,
              sources: [{ clusterTrustBundle: { name: 'rt-test.example.com:ctb:1', path: 'ca.pem' } }],
            },
          },
        ],
      }),
    });
    const source = created.spec?.volumes?.[0]?.projected?.sources?.[0];
    assert.deepEqual(JSON.parse(JSON.stringify(source?.clusterTrustBundle)), {
      name: 'rt-test.example.com:ctb:1',
      path: 'ca.pem',
    });
  });

  test('a MutatingWebhookConfiguration with a loopback URL is called and its patch stored', async () => {
    const ca = await createCertificateAuthority({ commonName: 'webhook-ca' });
    const serving = await issueCertificate(ca, {
      commonName: '127.0.0.1',
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    let calls = 0;
    const server: Server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        calls++;
        const review = JSON.parse(Buffer.concat(chunks).toString()) as { request: { uid: string } };
        const patch = [{ op: 'add', path: '/metadata/labels', value: { 'mutated-by': 'test-webhook' } }];
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: {
              uid: review.request.uid,
              allowed: true,
              patchType: 'JSONPatch',
              patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
            },
          }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    try {
      const kc = plane().cluster('runtime-a').kubeConfig();
      await kc.makeApiClient(CoreV1Api).createNamespace({
        body: { metadata: { name: 'hooked', labels: { hooked: 'yes' } } },
      });
      await kc.makeApiClient(AdmissionregistrationV1Api).createMutatingWebhookConfiguration({
        body: {
          metadata: { name: 'test-webhook' },
          webhooks: [
            {
              name: 'test.rt-bootstrapper.kyma-project.io',
              admissionReviewVersions: ['v1'],
              sideEffects: 'None',
              failurePolicy: 'Fail',
              namespaceSelector: { matchLabels: { hooked: 'yes' } },
              clientConfig: {
                url: `https://127.0.0.1:${port}/mutate`,
                caBundle: Buffer.from(ca.certPem).toString('base64'),
              },
              rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
            },
          ],
        },
      });
      const core = kc.makeApiClient(CoreV1Api);
      // The API server's webhook informer needs a moment to see the new configuration.
      const stored = await eventually(
        async () => {
          const name = `hooked-${Date.now()}`;
          const p = await core.createNamespacedPod({ namespace: 'hooked', body: pod(name) });
          return p.metadata?.labels?.['mutated-by'] === 'test-webhook' ? p : undefined;
        },
        20_000,
        'the webhook to be called',
      );
      const read = await core.readNamespacedPod({ name: stored.metadata!.name!, namespace: 'hooked' });
      assert.equal(read.metadata?.labels?.['mutated-by'], 'test-webhook');
      assert.ok(calls >= 1);
    } finally {
      server.close();
    }
  });
});

describe('harness cleanup', () => {
  const run = (mode: string, signal?: NodeJS.Signals) =>
    new Promise<{ pids: number[]; dir: string; code: number | null; signal: NodeJS.Signals | null }>(
      (resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/harness-child.ts', mode], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let out = '';
        let info: { pids: number[]; dir: string } | undefined;
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          if (!info && out.includes('\n')) {
            info = JSON.parse(out.split('\n')[0]!) as { pids: number[]; dir: string };
            if (signal) child.kill(signal);
          }
        });
        child.on('error', reject);
        child.on('exit', (code, sig) => {
          if (!info) reject(new Error(`child ended before starting a control plane (${code ?? sig})`));
          else resolve({ ...info, code, signal: sig });
        });
      },
    );

  for (const [mode, signal] of [
    ['stop', undefined],
    ['throw', undefined],
    ['wait', 'SIGINT'],
    ['wait', 'SIGTERM'],
  ] as const) {
    test(`no process or folder is left after ${signal ?? mode}`, async () => {
      const result = await run(mode, signal);
      assert.equal(result.pids.length, 3, 'one etcd, one kube-apiserver and a piped child were started');
      if (mode === 'throw') assert.notEqual(result.code, 0);
      if (signal) assert.equal(result.signal, signal);
      await eventually(() => (result.pids.some(isRunning) ? undefined : true), 10_000, 'children to end');
      assert.equal(existsSync(result.dir), false, 'the working folder is removed');
    });
  }

  test('children of an owner killed with SIGKILL are swept by the next harness', async () => {
    const result = await run('wait', 'SIGKILL');
    assert.ok(result.pids.every(isRunning), 'SIGKILL leaves orphans behind');
    assert.equal(sweepOrphans(), 3);
    await eventually(() => (result.pids.some(isRunning) ? undefined : true), 10_000, 'orphans to end');
  });
});
