// test-schedule: early
/**
 * Upstream's end-to-end suite on a real node, with the webhook installed as KIM installs it:
 * KIM's manifests become an Available Deployment by themselves (no simulated rollout), the API
 * server calls the webhook Pods through their Service, and the Pods it mutates run with
 * everything the features promise, read from inside their containers.
 */
import { AdmissionregistrationV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_NAME,
  WEBHOOK_SERVICE,
} from '../../src/api/runtime-names.js';
import { kubeletReads, parseKubeletVersion } from '../../src/api/kubelet-skew.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { eventually } from '../../src/envtest/eventually.js';
import { apiServerMetric } from '../support/apiserver-metrics.js';
import { seedPodBefore } from '../support/fixtures.js';
import { kimConfigure, kimStatus } from '../support/kim-installer.js';
import { handshake } from '../support/webhook-replicas.js';
import type { NodeLandscape } from './support/node-landscape.js';
import {
  createMutatedPod,
  httpPod,
  isMutated,
  pulledEvent,
  readyPod,
  readyPodLog,
  type HttpPodOptions,
} from './support/pods.js';
import { webhookCallFailures } from './support/upstream-stand-in.js';
import {
  e2eConfig,
  useWebhookOnNode,
  webhookAvailable,
  webhookLogs,
  webhookPods,
} from './support/webhook-on-node.js';

const webhook = useWebhookOnNode('kim');
const landscape = (): NodeLandscape => webhook().landscape;
const ALL = 'rt-cfg.kyma-project.io/all';
const PULL_SECRET = 'registry-credentials';

/**
 * A Pod that prints `fips=<KYMA_FIPS_MODE_ENABLED>` once and `pem=<bundle file, | for newlines>`
 * at start and whenever the file changes (polled every 200 ms), so a test reads both from its log.
 */
function reportingPod(name: string, o: HttpPodOptions = {}): V1Pod {
  const l = landscape();
  const file = `/etc/ssl/certs/${e2eConfig(l).clusterTrustBundle.certWritePath}`;
  const prelude = [
    `console.log('fips=' + process.env.KYMA_FIPS_MODE_ENABLED)`,
    `let last`,
    `const show = () => { let t; try { t = require('node:fs').readFileSync(${JSON.stringify(file)}, 'utf8') } catch { t = '(none)' }` +
      ` if (t !== last) { last = t; console.log('pem=' + t.replace(/\\n/g, '|')) } }`,
    `show()`,
    `setInterval(show, 200)`,
  ].join('; ');
  // Always: every Pod pulls, so each one proves its pull credentials (the layers are local by then).
  return httpPod(name, l.openImage, { ...o, prelude, pullAlways: true });
}

/** The bundle file's contents as the container last printed them. */
const lastPem = (log: string): string | undefined =>
  [...log.matchAll(/^pem=(.*)$/gm)].at(-1)?.[1]?.replace(/\|/g, '\n');

/** The PEM blocks of a bundle, sorted. */
const certificates = (bundle: string): string[] =>
  (bundle.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []).sort();

/**
 * The API server's count of its admitted calls to our webhook entry that answered 200. The
 * webhook Pods' own counters would miss a call answered by a Pod replaced since.
 */
const webhookRequests = (): Promise<number> =>
  apiServerMetric(landscape().plane.cluster('runtime'), 'apiserver_admission_webhook_request_total', {
    name: MUTATING_WEBHOOK_NAME,
    operation: 'CREATE',
    code: '200',
  });

/** The API server's count of calls to our webhook entry that failed open (failurePolicy Ignore). */
const failedOpen = (): Promise<number> =>
  apiServerMetric(landscape().plane.cluster('runtime'), 'apiserver_admission_webhook_fail_open_count', {
    name: MUTATING_WEBHOOK_NAME,
  });

/**
 * Creates a Pod and checks that our webhook answered its admission (200): a call that failed open
 * leaves the Pod as unmutated as a call that chose to change nothing, and the test must tell them
 * apart. No retry: a call that fails open here is a fault (the runner counts it too), and the
 * failure prints the webhook's logs.
 */
async function createAnswered(
  t: TestContext,
  core: CoreV1Api,
  namespace: string,
  pod: V1Pod,
): Promise<V1Pod> {
  const [answered, failed] = [await webhookRequests(), await failedOpen()];
  const created = await core.createNamespacedPod({ namespace, body: pod });
  const [answeredAfter, failedAfter] = [await webhookRequests(), await failedOpen()];
  if (answeredAfter <= answered) {
    for (const log of await webhookLogs(webhook().kc)) t.diagnostic(log);
    t.diagnostic(await webhookCallFailures(landscape().plane.cluster('runtime').dir));
  }
  assert.ok(
    answeredAfter > answered && failedAfter === failed,
    `our webhook answered the create: answered ${answered} → ${answeredAfter}, failed open ${failed} → ${failedAfter}`,
  );
  return created;
}

async function createNamespace(name: string, annotations: Record<string, string> = {}): Promise<CoreV1Api> {
  const core = webhook().kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name, annotations } } });
  return core;
}

/** Everything the features promise, checked on the stored Pod and from inside its container. */
async function assertAllFeatures(core: CoreV1Api, pod: V1Pod): Promise<void> {
  const { landscape: l, caPem } = webhook();
  const namespace = pod.metadata?.namespace ?? '';
  const name = pod.metadata?.name ?? '';
  const container = pod.spec?.containers[0];
  assert.equal(container?.image, l.securedImage, 'the image is rewritten to the secured registry');
  assert.deepEqual(
    pod.spec?.imagePullSecrets?.map((s) => s.name),
    [PULL_SECRET],
  );
  assert.ok(
    container.env?.some((e) => e.name === 'KYMA_FIPS_MODE_ENABLED' && e.value === 'true'),
    'KYMA_FIPS_MODE_ENABLED is set',
  );
  // The injected pull Secret is what the kubelet pulled with: the secured registry refuses anonymous pulls.
  const copied = await core.readNamespacedSecret({ name: PULL_SECRET, namespace });
  assert.equal(copied.type, 'kubernetes.io/dockerconfigjson');
  await readyPod(core, namespace, name);
  await pulledEvent(core, namespace, name, l.securedImage);
  const log = await core.readNamespacedPodLog({ name, namespace });
  assert.match(log, /^fips=true$/m, 'the variable reached the process');
  assert.equal(lastPem(log)?.trim(), caPem.trim(), 'the container reads the ClusterTrustBundle');
}

describe('upstream e2e on a real node, installed as KIM installs it', () => {
  test("KIM's manifests become an Available Deployment by themselves and KIM sees Ready", async () => {
    const { kc, kimManifests } = webhook();
    const deployment = await webhookAvailable(kc);
    assert.equal(await kimStatus(kc, kimManifests), 'Ready');
    const messages = (deployment.status?.conditions ?? []).map((c) => c.message ?? '');
    assert.ok(!messages.some((m) => m.includes('simulated')), messages.join('; '));
    // The API server calls the Service (not a URL), trusting the certificate the webhook made itself.
    const registration = await kc
      .makeApiClient(AdmissionregistrationV1Api)
      .readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
    const clientConfig = registration.webhooks?.[0]?.clientConfig;
    assert.equal(clientConfig?.url, undefined);
    assert.equal(clientConfig?.service?.name, WEBHOOK_SERVICE);
    const caBundle = Buffer.from(clientConfig.caBundle ?? '', 'base64').toString('utf8');
    assert.match(caBundle, /BEGIN CERTIFICATE/);
    for (const pod of await webhookPods(kc, deployment)) {
      assert.ok(await handshake(9443, caBundle, pod.status?.podIP), `${pod.metadata?.name ?? '?'} verifies`);
    }
  });

  test("the seed's Pod is mutated, pulled from the secured registry with the injected Secret, and Running", async () => {
    const { kc, landscape: l } = webhook();
    const core = kc.makeApiClient(CoreV1Api);
    const seed = seedPodBefore() as V1Pod;
    const pod = await createMutatedPod(core, 'default', 'seed', (name) => ({
      ...seed,
      metadata: { ...seed.metadata, name },
    }));
    assert.equal(pod.spec?.containers[0]?.image, l.seedImage);
    assert.deepEqual(
      pod.spec.imagePullSecrets?.map((s) => s.name),
      [PULL_SECRET],
    );
    const ready = await readyPod(core, 'default', pod.metadata?.name ?? '');
    assert.equal(ready.status?.phase, 'Running');
    await pulledEvent(core, 'default', pod.metadata?.name ?? '', l.seedImage);
  });

  test('with features off the image stays on the open registry and nothing is mounted', async (t) => {
    const { landscape: l } = webhook();
    const core = await createNamespace('e2e-off');
    // Not a webhook that was never asked: it answered the create and changed nothing.
    const created = await createAnswered(t, core, 'e2e-off', reportingPod('plain'));
    const name = created.metadata?.name ?? '';
    assert.equal(isMutated(created), false);
    assert.equal(created.spec?.containers[0]?.image, l.openImage);
    assert.equal(created.spec.imagePullSecrets, undefined);
    assert.equal(created.spec.containers[0].env, undefined);
    // The only projected volume is the ServiceAccount token's (kube-api-access-*).
    assert.ok(
      !(created.spec.volumes ?? []).some((v) => v.projected?.sources?.some((p) => p.clusterTrustBundle)),
    );
    const log = await readyPodLog(core, 'e2e-off', name);
    assert.match(log, /^fips=undefined$/m);
    assert.equal(lastPem(log), '(none)');
  });

  test('all features on at namespace level: the Pod runs with everything', async () => {
    const core = await createNamespace('e2e-namespace', { [ALL]: 'true' });
    const pod = await createMutatedPod(core, 'e2e-namespace', 'all', (name) => reportingPod(name));
    await assertAllFeatures(core, pod);
    // The node's side of the kubelet check (docs/trust-bundle-api.md): the real kubelet's version
    // parses as 1.34, which reads v1beta1, the version this control plane serves; so the webhook
    // mounted, and the Pod above read the bundle through that kubelet.
    const nodes = (await core.listNode()).items;
    assert.ok(nodes.length > 0);
    for (const node of nodes) {
      const version = parseKubeletVersion(node.status?.nodeInfo?.kubeletVersion);
      assert.deepEqual(version, { major: 1, minor: 34 }, node.status?.nodeInfo?.kubeletVersion);
      assert.deepEqual(kubeletReads(version), ['v1beta1']);
    }
  });

  test('all features on at Pod level: the Pod runs with everything', async () => {
    const core = await createNamespace('e2e-pod');
    const pod = await createMutatedPod(core, 'e2e-pod', 'all', (name) =>
      reportingPod(name, { annotations: { [ALL]: 'true' } }),
    );
    await assertAllFeatures(core, pod);
  });

  test('a ClusterTrustBundle change reaches the file inside a running container', async (t) => {
    const { kc, sources } = webhook();
    const core = kc.makeApiClient(CoreV1Api);
    const pods = await core.listNamespacedPod({ namespace: 'e2e-namespace' });
    const pod = pods.items.find((p) => isMutated(p));
    assert.ok(pod?.metadata?.name, 'the namespace-level Pod from the test before');
    const name = pod.metadata.name;
    const next = await createCertificateAuthority({ commonName: 'e2e-trust-bundle-next' });
    const bundle = sources.clusterTrustBundle;
    assert.ok(bundle);
    const trustBundle = `${String(bundle.spec.trustBundle).trim()}\n${next.certPem.trim()}\n`;
    const started = Date.now();
    // As KIM copies a changed source from the KCP.
    await kimConfigure(kc, {
      ...sources,
      clusterTrustBundle: { ...bundle, spec: { ...bundle.spec, trustBundle } },
    });
    const pem = await eventually(
      async () => {
        const seen = lastPem(await core.readNamespacedPodLog({ name, namespace: 'e2e-namespace' }));
        return seen?.includes(next.certPem.trim()) ? seen : undefined;
      },
      // The kubelet keeps a bundle it read by name for its cache TTL, 5 minutes (docs/node.md).
      420_000,
      'the new bundle in the container',
      // A log read a second: at the default 50 ms the wait read the log 6,000 times through the
      // API server and the kubelet, CPU the files running beside it lacked.
      1_000,
    ).catch(async (error: unknown) => {
      t.diagnostic(await core.readNamespacedPodLog({ name, namespace: 'e2e-namespace' }));
      const dir = webhook().landscape.plane.cluster('runtime').node?.paths.dir ?? '';
      const kubeletLog = await readFile(join(dir, 'kubelet.log'), 'utf8').catch(() => '');
      t.diagnostic(
        kubeletLog
          .split('\n')
          .filter((line) => /trust|bundle|rt-bootstrapper-certs|remount/i.test(line))
          .slice(-40)
          .join('\n'),
      );
      throw error;
    });
    t.diagnostic(`kubelet brought the changed bundle into the container in ${Date.now() - started} ms`);
    // The kubelet normalizes a bundle: each certificate once, in an order of its own.
    assert.deepEqual(certificates(pem), certificates(trustBundle));
    const after = await core.readNamespacedPod({ name, namespace: 'e2e-namespace' });
    assert.equal(after.status?.containerStatuses?.[0]?.restartCount, 0, 'the same container, not a restart');
  });
});
