import { AppsV1Api, CertificatesV1beta1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyObjects } from '../../src/kube/apply.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { renderWebhookManifests, webhookManifestList } from '../../src/render/webhook-manifests.js';
import { eventually } from '../support/control-plane.js';
import { seedConfigText } from '../support/fixtures.js';
import { useNodeLandscape } from './support/node-landscape.js';

const landscape = useNodeLandscape();
// Bounds, not assertions on speed: a cold image pull on a busy 2-core machine takes a while.
const POD_READY_MS = 180_000;

/** A Pod that serves HTTP from the rtb image's node, with a readiness probe the kubelet runs. */
function httpPod(name: string, image: string, pullSecret?: string, pullAlways = false): V1Pod {
  return {
    metadata: { name },
    spec: {
      ...(pullSecret ? { imagePullSecrets: [{ name: pullSecret }] } : {}),
      securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'server',
          image,
          ...(pullAlways ? { imagePullPolicy: 'Always' } : {}),
          command: ['/usr/bin/node', '-e'],
          args: ["require('node:http').createServer((q, s) => s.end('ok')).listen(8080)"],
          readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
        },
      ],
    },
  };
}

/** An HTTP Pod that first prints one line computed by `expression` (JavaScript) to its log. */
function printingPod(name: string, image: string, expression: string): V1Pod {
  const pod = httpPod(name, image);
  const container = pod.spec?.containers[0];
  if (container) {
    container.args = [
      `console.log(${expression}); require('node:http').createServer((q, s) => s.end('ok')).listen(8080)`,
    ];
  }
  return pod;
}

/**
 * Creates fresh Pods until one is admitted with the webhook's mark: with `failurePolicy: Ignore`
 * a Pod admitted while the API server does not yet reach the webhook is left unmutated.
 */
async function createMutatedPod(
  core: CoreV1Api,
  namespace: string,
  prefix: string,
  make: (name: string) => V1Pod,
): Promise<V1Pod> {
  let attempt = 0;
  return eventually(
    async () => {
      const name = `${prefix}-${attempt++}`;
      const created = await core.createNamespacedPod({ namespace, body: make(name) });
      if (created.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/modified'] === 'true')
        return created;
      await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
      return undefined;
    },
    60_000,
    'a Pod mutated by the webhook',
  );
}

/** Waits until the Pod is Ready and returns its log (read through the API server from the kubelet). */
async function readyPodLog(core: CoreV1Api, namespace: string, name: string): Promise<string> {
  await eventually(
    async () => (isReady(await core.readNamespacedPod({ name, namespace })) ? true : undefined),
    POD_READY_MS,
    `Pod ${name} to be Ready`,
  );
  return core.readNamespacedPodLog({ name, namespace });
}

const isReady = (pod: V1Pod): boolean =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

describe('a real node runs the locally built image', () => {
  test('a Pod pulls the image from the secured registry with a pull Secret and becomes Ready', async () => {
    const l = landscape();
    const core = l.plane.cluster('runtime').kubeConfig().makeApiClient(CoreV1Api);
    const namespace = 'default';
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: 'secured-registry' },
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': Buffer.from(l.secured.dockerConfigJson()).toString('base64') },
      },
    });
    await core.createNamespacedPod({
      namespace,
      body: httpPod('with-secret', l.securedImage, 'secured-registry'),
    });
    const pod = await eventually(
      async () => {
        const p = await core.readNamespacedPod({ name: 'with-secret', namespace });
        return isReady(p) ? p : undefined;
      },
      POD_READY_MS,
      'the Pod to be Ready',
    );
    assert.match(pod.status?.podIP ?? '', /^10\.213\.\d+\.\d+$/);
    assert.equal(pod.status?.containerStatuses?.[0]?.image, l.securedImage);
  });

  test('without the pull Secret the secured registry refuses the image', async () => {
    const l = landscape();
    const core = l.plane.cluster('runtime').kubeConfig().makeApiClient(CoreV1Api);
    // Always: the first test may have left the image on the node, and a present image needs no pull.
    await core.createNamespacedPod({
      namespace: 'default',
      body: httpPod('no-secret', l.securedImage, undefined, true),
    });
    const reason = await eventually(
      async () => {
        const p = await core.readNamespacedPod({ name: 'no-secret', namespace: 'default' });
        const waiting = p.status?.containerStatuses?.[0]?.state?.waiting;
        return waiting?.reason === 'ErrImagePull' || waiting?.reason === 'ImagePullBackOff'
          ? `${waiting.reason}: ${waiting.message ?? ''}`
          : undefined;
      },
      POD_READY_MS,
      'the pull to fail',
    );
    assert.match(reason, /401|unauthorized|authorization/i);
  });

  test('the rendered webhook Deployment runs from the image and its Pods become Ready', async () => {
    const l = landscape();
    const kc = l.plane.cluster('runtime').kubeConfig();
    const manifests = renderWebhookManifests({ image: l.openImage, version: '0.1.0' });
    await applyObjects(kc, webhookManifestList(manifests));
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: 'kyma-system',
      body: {
        metadata: { name: 'rt-bootstrapper-config' },
        data: { 'rt-bootstrapper-config.json': seedConfigText() },
      },
    });
    const apps = kc.makeApiClient(AppsV1Api);
    const deployment = await eventually(
      async () => {
        const d = await apps.readNamespacedDeployment({
          name: 'rt-bootstrapper-controller-manager',
          namespace: 'kyma-system',
        });
        const available = d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True');
        return available && d.status?.readyReplicas === d.spec?.replicas ? d : undefined;
      },
      POD_READY_MS,
      'the webhook Deployment to be Available with every replica Ready',
    );
    assert.equal(deployment.status?.readyReplicas, 2);
    const pods = await core.listNamespacedPod({
      namespace: 'kyma-system',
      labelSelector: Object.entries(deployment.spec?.selector.matchLabels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    });
    for (const pod of pods.items) {
      assert.ok(isReady(pod), `${pod.metadata?.name ?? '?'} is Ready`);
      assert.equal(pod.spec?.containers[0]?.image, l.openImage);
      assert.equal(pod.status?.containerStatuses?.[0]?.restartCount, 0);
    }
  });

  test('the API server calls the webhook Pods through their Service, and the mutated Pod runs', async () => {
    const l = landscape();
    const core = l.plane.cluster('runtime').kubeConfig().makeApiClient(CoreV1Api);
    const namespace = 'e2e-fips';
    await core.createNamespace({
      body: {
        metadata: { name: namespace, annotations: { 'rt-cfg.kyma-project.io/set-fips-mode': 'true' } },
      },
    });
    const mutated = await createMutatedPod(core, namespace, 'fips', (name) =>
      printingPod(name, l.openImage, "'fips=' + process.env.KYMA_FIPS_MODE_ENABLED"),
    );
    const env = mutated.spec?.containers[0]?.env ?? [];
    assert.ok(env.some((e) => e.name === 'KYMA_FIPS_MODE_ENABLED' && e.value === 'true'));
    // The variable reached the process.
    const log = await readyPodLog(core, namespace, mutated.metadata?.name ?? '');
    assert.match(log, /^fips=true$/m);
  });

  test('the kubelet mounts the ClusterTrustBundle the webhook added, readable inside the container', async () => {
    const l = landscape();
    const kc = l.plane.cluster('runtime').kubeConfig();
    const core = kc.makeApiClient(CoreV1Api);
    const ca = await createCertificateAuthority({ commonName: 'e2e-trust-bundle' });
    const config = JSON.parse(seedConfigText()) as {
      clusterTrustBundle: { name: string; certWritePath: string };
    };
    const bundle = config.clusterTrustBundle;
    await kc.makeApiClient(CertificatesV1beta1Api).createClusterTrustBundle({
      body: {
        metadata: { name: bundle.name },
        spec: { signerName: bundle.name.split(':').slice(0, -1).join('/'), trustBundle: ca.certPem },
      },
    });
    const namespace = 'e2e-trust';
    await core.createNamespace({
      body: {
        metadata: {
          name: namespace,
          annotations: { 'rt-cfg.kyma-project.io/add-cluster-trust-bundle': 'true' },
        },
      },
    });
    const file = `/etc/ssl/certs/${bundle.certWritePath}`;
    const mutated = await createMutatedPod(core, namespace, 'trust', (name) =>
      printingPod(
        name,
        l.openImage,
        `'pem=' + require('node:fs').readFileSync(${JSON.stringify(file)}, 'utf8').replace(/\\n/g, '|')`,
      ),
    );
    const log = await readyPodLog(core, namespace, mutated.metadata?.name ?? '');
    const pem = /^pem=(.*)$/m.exec(log)?.[1]?.replace(/\|/g, '\n');
    assert.ok(pem, `the container printed the file: ${log}`);
    assert.equal(pem.trim(), ca.certPem.trim());
  });
});
