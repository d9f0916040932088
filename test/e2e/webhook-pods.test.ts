/**
 * The webhook's own Pods on a real node, installed from `renderWebhookManifests` as our installer
 * applies it: Running and Ready through their real probes, `/metrics` on 8080, the serving
 * certificate and caBundle in place, and a replica killed while Pods are admitted.
 */
import { AdmissionregistrationV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  RUNTIME_NAMESPACE,
  WEBHOOK_PORT,
  WEBHOOK_TLS_SECRET,
} from '../../src/api/runtime-names.js';
import { eventually } from '../../src/envtest/eventually.js';
import { handshake, SERVICE_NAME } from '../support/webhook-replicas.js';
import { tlsProtocol } from '../support/tls-protocol.js';
import { httpPod, isMutated, isReady, printingPod, readyPodLog } from './support/pods.js';
import { podProxyGet, useWebhookOnNode, webhookAvailable, webhookPods } from './support/webhook-on-node.js';

const webhook = useWebhookOnNode('apply');
const METRICS_PORT = 8080;

const nameOf = (pod: V1Pod): string => pod.metadata?.name ?? '';

async function registeredCaBundle(): Promise<string> {
  const registration = await webhook()
    .kc.makeApiClient(AdmissionregistrationV1Api)
    .readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
  return Buffer.from(registration.webhooks?.[0]?.clientConfig.caBundle ?? '', 'base64').toString('utf8');
}

describe("the webhook's Pods on a real node", () => {
  test('the Pods run from the image, Running and Ready through their real probes, and serve /metrics', async () => {
    const { kc, landscape: l } = webhook();
    const deployment = await webhookAvailable(kc);
    const pods = await webhookPods(kc, deployment);
    assert.equal(pods.length, deployment.spec?.replicas);
    for (const pod of pods) {
      assert.equal(pod.status?.phase, 'Running');
      assert.ok(isReady(pod), `${nameOf(pod)} is Ready`);
      const container = pod.spec?.containers[0];
      assert.ok(container);
      assert.equal(container.image, l.openImage);
      // The kubelet ran these: HTTPS on the serving port, as rendered.
      const readiness = container.readinessProbe?.httpGet;
      assert.deepEqual([readiness?.scheme, readiness?.path], ['HTTPS', '/readyz']);
      assert.equal(container.livenessProbe?.httpGet?.path, '/healthz');
      assert.equal(container.securityContext?.readOnlyRootFilesystem, true);
      assert.equal(pod.status.containerStatuses?.[0]?.restartCount, 0);
      const metrics = await podProxyGet(kc, pod, METRICS_PORT, 'metrics');
      assert.match(metrics, /^# TYPE rtb_webhook_requests_total counter$/m);
      assert.match(metrics, /^process_resident_memory_bytes \d/m);
    }
  });

  test('the Pods run with --fips and serve TLS 1.3 only: a TLS 1.2-only client is refused', async () => {
    const { kc } = webhook();
    for (const pod of await webhookPods(kc, await webhookAvailable(kc))) {
      assert.ok(pod.spec?.containers[0]?.args?.includes('--fips'), `${nameOf(pod)} runs with --fips`);
      const log = await kc
        .makeApiClient(CoreV1Api)
        .readNamespacedPodLog({ name: nameOf(pod), namespace: RUNTIME_NAMESPACE });
      assert.match(log, /"msg":"FIPS mode: the FIPS provider serves every algorithm, MD5 refused"/);
      const target = { host: pod.status?.podIP, port: WEBHOOK_PORT, rejectUnauthorized: false };
      const protocols = [await tlsProtocol(target, 'TLSv1.2'), await tlsProtocol(target, 'TLSv1.3')];
      assert.match(protocols[0] ?? '', /^refused: /, nameOf(pod));
      assert.equal(protocols[1], 'TLSv1.3', nameOf(pod));
    }
  });

  test('inside the image: the FIPS provider is active and MD5 refused', async () => {
    const { kc, landscape: l } = webhook();
    const core = kc.makeApiClient(CoreV1Api);
    const namespace = 'e2e-fips';
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const probe = `JSON.stringify({
      fips: require('node:crypto').getFips(),
      md5: (() => { try { require('node:crypto').createHash('md5'); return 'served'; } catch (e) { return e.message; } })(),
      provider: require('node:fs').readFileSync('/usr/share/rtb/fips-provider.txt', 'utf8'),
    })`;
    await core.createNamespacedPod({ namespace, body: printingPod('fips-probe', l.openImage, probe) });
    const seen = JSON.parse((await readyPodLog(core, namespace, 'fips-probe')).split('\n')[0] ?? '') as {
      fips: number;
      md5: string;
      provider: string;
    };
    assert.equal(seen.fips, 1);
    assert.match(seen.md5, /unsupported/);
    assert.match(seen.provider, /name: OpenSSL FIPS Provider\s+version: 3\.\d+\.\d+\s+status: active/);
  });

  test('the serving certificate names the Service and verifies against the caBundle alone', async () => {
    const { kc } = webhook();
    const caBundle = await eventually(
      async () => {
        const b = await registeredCaBundle();
        return b.includes('BEGIN CERTIFICATE') ? b : undefined;
      },
      60_000,
      'the caBundle',
    );
    const secret = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: WEBHOOK_TLS_SECRET, namespace: RUNTIME_NAMESPACE });
    const cert = new X509Certificate(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64'));
    assert.match(cert.subjectAltName ?? '', new RegExp(`DNS:${SERVICE_NAME.replace(/\./g, '\\.')}`));
    for (const pod of await webhookPods(kc, await webhookAvailable(kc))) {
      assert.ok(await handshake(WEBHOOK_PORT, caBundle, pod.status?.podIP), `${nameOf(pod)} verifies`);
    }
  });

  test('a webhook Pod killed mid-way is replaced, and no admission fails while Pods are created', async (t) => {
    const { kc, landscape: l } = webhook();
    const core = kc.makeApiClient(CoreV1Api);
    const namespace = 'e2e-kill';
    await core.createNamespace({
      body: {
        metadata: { name: namespace, annotations: { 'rt-cfg.kyma-project.io/set-fips-mode': 'true' } },
      },
    });
    const before = await webhookPods(kc, await webhookAvailable(kc));
    const victim = before[0];
    assert.ok(victim);
    // Dry-run creates: admission runs in full (sideEffects NoneOnDryRun), the node runs nothing.
    const results: { mutated: boolean; error?: unknown }[] = [];
    const done = new AbortController();
    const loop = (async () => {
      for (let i = 0; !done.signal.aborted; i++) {
        try {
          const created = await core.createNamespacedPod({
            namespace,
            body: httpPod(`loop-${i}`, l.openImage),
            dryRun: 'All',
          });
          results.push({ mutated: isMutated(created) });
        } catch (error) {
          results.push({ mutated: false, error });
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await eventually(() => (results.length >= 10 ? true : undefined), 60_000, 'creates before the kill');
    await core.deleteNamespacedPod({
      name: nameOf(victim),
      namespace: RUNTIME_NAMESPACE,
      gracePeriodSeconds: 0,
    });
    const replaced = await eventually(
      async () => {
        const pods = await webhookPods(kc, await webhookAvailable(kc));
        const replacedAndReady =
          pods.length === before.length && pods.every((p) => nameOf(p) !== nameOf(victim) && isReady(p));
        return replacedAndReady ? pods : undefined;
      },
      180_000,
      'a Ready replacement',
    );
    const afterReplacement = results.length;
    await eventually(
      () => (results.length >= afterReplacement + 10 ? true : undefined),
      60_000,
      'creates after',
    );
    done.abort();
    await loop;
    const failed = results.filter((r) => r.error !== undefined);
    const unmutated = results.filter((r) => !r.mutated).length;
    t.diagnostic(
      `${results.length} creates (${afterReplacement} until the replacement was Ready), ${unmutated} left unmutated (failurePolicy Ignore), ${failed.length} failed`,
    );
    assert.deepEqual(
      failed.map((r) => String(r.error)),
      [],
      'no create failed',
    );
    assert.equal(replaced.length, before.length);
    assert.ok(
      results.slice(afterReplacement).every((r) => r.mutated),
      'every Pod created once the replacement served was mutated',
    );
  });
});
