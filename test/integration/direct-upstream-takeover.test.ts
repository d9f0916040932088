/**
 * Direct mode takes over a runtime where upstream's webhook serves (its own CA, its certificate
 * from Secret `rt-bootstrapper-webhook-cert`, that CA in the registration's caBundle), while Pods
 * are created through the real API server every 300 ms under failurePolicy Fail, so a call that
 * fails TLS fails the Pod. No kubelet runs here: upstream's stand-in and our replicas run in this
 * process behind a TCP front that plays the Service (test/support/tcp-balancer.ts); upstream's
 * Pod is a Pod object with upstream's labels, deleted when its stand-in stops, as the deployment
 * controller scales the old ReplicaSet down once ours are ready.
 */
import { AdmissionregistrationV1Api, AppsV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_NAME,
  RUNTIME_NAMESPACE,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_SELECTOR,
  webhookServiceDnsNames,
} from '../../src/api/runtime-names.js';
import { eventually } from '../../src/envtest/eventually.js';
import { reportDeploymentRollout } from '../../src/local/simulated-kubelet.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { parseCertificates } from '../../src/pki/pem-certificates.js';
import { KCP_SERVING_POLICY } from '../../src/serving-cert/serving-policy.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { startWebhookApp, type WebhookApp } from '../../src/webhook/webhook-app.js';
import { useControlPlane } from '../support/control-plane.js';
import { seedConfigText } from '../support/fixtures.js';
import { DirectFleet } from '../support/direct-fleet.js';
import { dockerConfig } from '../support/kcp.js';
import { kimConfigure } from '../support/kim-installer.js';
import { startTcpBalancer, type TcpBalancer } from '../support/tcp-balancer.js';
import { caBundle, createSeedPod, handshake, mutateUrl, startReplica } from '../support/webhook-replicas.js';

const plane = useControlPlane({ clusters: ['kcp', 'rt'] });
const kcp = () => plane().cluster('kcp');
const rt = () => plane().cluster('rt');
const UPSTREAM_POD = 'rt-bootstrapper-controller-manager-upstream';

let dir = '';
const fleet = new DirectFleet(kcp);
let balancer: TcpBalancer | undefined;
const apps: WebhookApp[] = [];
let serving: WebhookApp[] = [];

const fingerprints = (pem: string | undefined): string[] =>
  parseCertificates(pem).certificates.map((c) => c.fingerprint);
const mutated = (pod: V1Pod): boolean =>
  pod.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/modified'] === 'true' &&
  pod.spec?.containers[0]?.image === 'ghcr.io/app:1' &&
  (pod.spec.imagePullSecrets ?? []).filter((s) => s.name === 'registry-credentials').length === 1;

/** Upstream's webhook: its certificate files, its CA in the registration, its Pod object. */
async function startUpstream(): Promise<{ app: WebhookApp; caPem: string }> {
  const kc = rt().kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: RUNTIME_NAMESPACE } } });
  // What KIM copied beside upstream's install: the config and the pull Secret.
  await kimConfigure(kc, {
    configMapData: { 'rt-bootstrapper-config.json': seedConfigText() },
    pullSecret: { type: 'kubernetes.io/dockerconfigjson', data: dockerConfig('kim') },
  });
  const ca = await createCertificateAuthority({ commonName: 'upstream cert-management' });
  const leaf = await issueCertificate(ca, {
    commonName: 'rt-bootstrapper-webhook-service.kyma-system.svc',
    dnsNames: webhookServiceDnsNames(RUNTIME_NAMESPACE),
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  await writeFile(join(dir, 'tls.crt'), leaf.certPem);
  await writeFile(join(dir, 'tls.key'), leaf.keyPem);
  await writeFile(join(dir, 'config.json'), seedConfigText());
  const app = await startWebhookApp({
    kubeConfig: kc,
    tls: { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') },
    configFile: join(dir, 'config.json'),
    host: '127.0.0.1',
    port: 0,
    removeUpstreamLeftovers: false,
    logger: silentLogger(),
  });
  apps.push(app);
  balancer = await startTcpBalancer([app.port]);
  await core.createNamespacedPod({
    namespace: RUNTIME_NAMESPACE,
    body: {
      metadata: { name: UPSTREAM_POD, labels: { ...WEBHOOK_SELECTOR } },
      spec: { nodeName: 'no-such-node', containers: [{ name: 'manager', image: 'upstream:0.5.0' }] },
    },
  });
  await kc.makeApiClient(AdmissionregistrationV1Api).createMutatingWebhookConfiguration({
    body: {
      metadata: { name: MUTATING_WEBHOOK_CONFIGURATION },
      webhooks: [
        {
          name: MUTATING_WEBHOOK_NAME,
          admissionReviewVersions: ['v1'],
          clientConfig: {
            url: mutateUrl(balancer.port),
            caBundle: Buffer.from(ca.certPem).toString('base64'),
          },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          objectSelector: {
            matchExpressions: [
              { key: 'app.kubernetes.io/name', operator: 'NotIn', values: ['rt-bootstrapper'] },
            ],
          },
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
        },
      ],
    },
  });
  return { app, caPem: ca.certPem };
}

describe('direct mode takes over an upstream install, without a window', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rtb-upstream-'));
    await fleet.prepare({ rt: rt() });
    fleet.onStop(() => balancer?.stop());
    fleet.onStop(() => Promise.all(apps.map((a) => a.stop())));
  });
  after(async () => {
    await fleet.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('direct mode over a serving upstream install: every Pod admitted and mutated, upstream’s CA kept until its Pod is gone', async (t) => {
    const upstream = await startUpstream();
    serving = [upstream.app];
    const upstreamFp = fingerprints(upstream.caPem)[0]!;
    const problems: string[] = [];
    let created = 0;
    let whileUpstream = 0;
    const done = new AbortController();
    const stream = (async () => {
      for (let i = 0; !done.signal.aborted; i++) {
        const at = Date.now();
        const upstreamServes = serving.includes(upstream.app);
        try {
          const pod = await createSeedPod(rt(), `p-${i}`);
          created += 1;
          if (upstreamServes) whileUpstream += 1;
          if (!mutated(pod))
            problems.push(
              `p-${i} admitted but not mutated once: ${JSON.stringify(pod.metadata?.annotations)}`,
            );
        } catch (error) {
          problems.push(`p-${i} refused: ${String(error).split('\n')[0] ?? ''}`);
        }
        // The API server's own check of every backend: the caBundle alone as trust.
        const bundle = (await caBundle(rt())) ?? '';
        for (const a of [...serving])
          if (!(await handshake(a.port, bundle)) && serving.includes(a))
            problems.push(`p-${i}: a backend serves a certificate the caBundle does not trust`);
        await sleep(Math.max(0, 300 - (Date.now() - at)));
      }
    })();

    try {
      await sleep(1_000);
      await fleet.start({
        runtimeTimeoutMs: 5_000,
        servingPolicy: { ...KCP_SERVING_POLICY, settleMs: 2_000, overlapMs: 4_000 },
        webhookRouting: { registrationUrl: mutateUrl(balancer!.port), extraSans: ['127.0.0.1'] },
      });
      await fleet.create('rt');
      const kc = rt().kubeConfig();
      const apps1 = kc.makeApiClient(AppsV1Api);
      await eventually(
        () => apps1.readNamespacedDeployment({ name: WEBHOOK_DEPLOYMENT, namespace: RUNTIME_NAMESPACE }),
        30_000,
        "the KCP's Deployment",
      );
      await reportDeploymentRollout(kc, RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT, false);
      // Our replicas come up behind the Service beside upstream's; upstream's CA stays meanwhile.
      for (const identity of ['direct-a', 'direct-b']) {
        const r = await startReplica(rt(), identity, { issuer: 'external' });
        apps.push(r.app);
        await eventually(() => (r.app.ready() ? true : undefined), 30_000, `${identity} ready`);
        serving.push(r.app);
        balancer!.setBackends(serving.map((a) => a.port));
      }
      assert.ok(fingerprints(await caBundle(rt())).includes(upstreamFp), "upstream's CA while its Pod runs");
      // The old ReplicaSet goes: upstream's stand-in out of the endpoints, stopped, its Pod deleted.
      serving = serving.filter((a) => a !== upstream.app);
      balancer!.setBackends(serving.map((a) => a.port));
      await upstream.app.stop({ delayMs: 1_500, timeoutMs: 10_000 });
      await kc
        .makeApiClient(CoreV1Api)
        .deleteNamespacedPod({ name: UPSTREAM_POD, namespace: RUNTIME_NAMESPACE, gracePeriodSeconds: 0 });
      await reportDeploymentRollout(kc, RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT, true);
      await eventually(
        async () => (fingerprints(await caBundle(rt())).includes(upstreamFp) ? undefined : true),
        60_000,
        "upstream's CA to leave the caBundle once its Pod is gone",
      );
      const rb = await fleet.waitState('rt', 'Ready', 60_000);
      assert.ok(rb.status?.conditions?.some((c) => c.type === 'ServingCertificate' && c.status === 'True'));
      await sleep(2_000);
    } finally {
      done.abort();
      await stream;
    }
    t.diagnostic(`${created} Pods, ${whileUpstream} while upstream's stand-in served`);
    assert.deepEqual(problems, []);
    assert.ok(whileUpstream >= 5, 'Pods were created while upstream served');
    assert.deepEqual(
      fingerprints(await caBundle(rt())),
      fingerprints(fleet.direct.cas.current().certPem),
      "the caBundle holds the KCP's CA alone",
    );
  });
});
