import { CoreV1Api } from '@kubernetes/client-node';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { CONFIG_MAP_NAMESPACE } from '../api/webhook-features.js';
import type { LocalCluster } from '../envtest/control-plane.js';
import { applyObjects } from '../kube/apply.js';
import { landscapeSourceObjects, trustBundleApiVersionOf } from './landscape-sources.js';
import { createCertificateAuthority } from '../pki/certificate-authority.js';
import { issueCertificate } from '../pki/issue-certificate.js';
import { MUTATING_WEBHOOK_CONFIGURATION } from '../api/runtime-names.js';
import { renderWebhookManifests } from '../render/webhook-manifests.js';
import { startWebhookApp, type WebhookApp } from '../webhook/webhook-app.js';

/** A webhook serving one local cluster from this process. */
export interface LocalWebhook {
  readonly app: WebhookApp;
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Gives a local cluster what a runtime has: the webhook's sources (pull Secret, ConfigMap,
 * ClusterTrustBundle), the webhook itself (served from this process on loopback, since no
 * kubelet runs Pods here) and its MutatingWebhookConfiguration; resolves once the API server
 * really calls it.
 */
export async function installLocalWebhook(
  cluster: LocalCluster,
  options: {
    configText?: string;
    logger: Logger;
    failurePolicy?: 'Ignore' | 'Fail';
    drift?: { url: string; certFile: string; keyFile: string; caFile: string };
  },
): Promise<LocalWebhook> {
  const kc = cluster.kubeConfig();
  // Alone, the runtime gets its sources here; in a landscape with a KCP the controller writes them.
  if (options.configText !== undefined) {
    await applyObjects(
      kc,
      await landscapeSourceObjects({
        configText: options.configText,
        namespace: CONFIG_MAP_NAMESPACE,
        trustBundleApiVersion: await trustBundleApiVersionOf(kc),
      }),
    );
  }

  const dir = join(cluster.dir, 'webhook');
  await mkdir(dir, { recursive: true });
  const servingCa = await createCertificateAuthority({ commonName: `${cluster.name} webhook CA` });
  const serving = await issueCertificate(servingCa, {
    commonName: 'rt-bootstrapper-webhook',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const tls = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
  await writeFile(tls.certFile, serving.certPem);
  await writeFile(tls.keyFile, serving.keyPem, { mode: 0o600 });
  const app = await startWebhookApp({
    kubeConfig: kc,
    tls,
    host: '127.0.0.1',
    port: 0,
    logger: options.logger,
  });
  const url = `https://127.0.0.1:${app.port}/mutate`;
  const manifests = renderWebhookManifests({
    image: 'local',
    url,
    caBundlePem: servingCa.certPem,
    failurePolicy: options.failurePolicy ?? 'Ignore',
  });
  // Its own name: in a landscape the controller owns the real one (pointing at the
  // in-cluster Service, which cannot run without a kubelet) and would overwrite ours.
  const registration = manifests.mutatingWebhookConfiguration;
  await applyObjects(kc, [
    {
      ...registration,
      metadata: { ...registration.metadata, name: `${MUTATING_WEBHOOK_CONFIGURATION}-local` },
    },
  ]);
  await waitUntilCalled(cluster, app);
  return { app, url, stop: () => app.stop() };
}

/** The API server learns about a new webhook through an informer; probe with dry runs until it calls us. */
async function waitUntilCalled(cluster: LocalCluster, app: WebhookApp, timeoutMs = 30_000): Promise<void> {
  const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (app.ready()) {
      const probe = await core.createNamespacedPod({
        namespace: 'default',
        dryRun: 'All',
        body: {
          metadata: { name: 'rtb-probe', annotations: { 'rt-cfg.kyma-project.io/set-fips-mode': 'true' } },
          spec: { containers: [{ name: 'probe', image: 'probe' }] },
        },
      });
      if (probe.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/defaulted'] === 'true') return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the API server of ${cluster.name} did not call the webhook within ${timeoutMs} ms`);
}
