import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  type V1MutatingWebhookConfiguration,
  type V1Pod,
} from '@kubernetes/client-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import type { CertificateAuthority } from '../../src/pki/certificate-authority.js';
import { silentLogger, type Logger } from '../../src/telemetry/logger.js';
import { startWebhookApp, type WebhookApp, type WebhookAppOptions } from '../../src/webhook/webhook-app.js';
import { renderWebhookManifests } from '../../src/render/webhook-manifests.js';
import { writeServingFiles } from './serving-files.js';
import { eventually } from '../../src/envtest/eventually.js';

/** A webhook running in this process against a real cluster, with its own serving PKI. */
export interface TestWebhook {
  readonly app: WebhookApp;
  readonly ca: CertificateAuthority;
  readonly certFile: string;
  readonly keyFile: string;
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts the webhook app on a free loopback port and waits until it is ready. */
export async function startTestWebhook(
  cluster: LocalCluster,
  options: Partial<WebhookAppOptions> & { logger?: Logger } = {},
): Promise<TestWebhook> {
  const dir = await mkdtemp(join(tmpdir(), 'rtb-webhook-'));
  const { ca, certFile, keyFile } = await writeServingFiles(dir, 'webhook-test-ca');
  const app = await startWebhookApp({
    kubeConfig: cluster.kubeConfig(),
    tls: { certFile, keyFile },
    host: '127.0.0.1',
    port: 0,
    logger: options.logger ?? silentLogger(),
    ...options,
  });
  await eventually(() => (app.ready() ? true : undefined), 20_000, 'the webhook to be ready');
  return {
    app,
    ca,
    certFile,
    keyFile,
    url: `https://127.0.0.1:${app.port}/mutate`,
    async stop() {
      await app.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Registers the configuration with the cluster's API server. With `probe` (a Pod the webhook
 * changes), waits until a dry-run create of it in `default` comes back defaulted: the API
 * server's webhook informer takes a moment to see a new registration.
 */
export async function registerWebhook(
  cluster: LocalCluster,
  configuration: V1MutatingWebhookConfiguration,
  probe?: V1Pod,
): Promise<void> {
  const api = cluster.kubeConfig().makeApiClient(AdmissionregistrationV1Api);
  await api.createMutatingWebhookConfiguration({ body: configuration });
  if (!probe) return;
  const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
  await eventually(
    async () => {
      const seen = await core.createNamespacedPod({ namespace: 'default', body: probe, dryRun: 'All' });
      return seen.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/defaulted'] === 'true'
        ? true
        : undefined;
    },
    20_000,
    'the API server to call the webhook',
  );
}

/**
 * Registers `hook` as the runtime's mutating webhook as rendered, failing open (a Pod is admitted
 * unchanged when the webhook does not answer), and waits until the API server calls it for `probe`.
 */
export async function registerFailingOpen(
  cluster: LocalCluster,
  hook: TestWebhook,
  probe: V1Pod,
): Promise<void> {
  const manifests = renderWebhookManifests({
    image: 'unused',
    url: hook.url,
    caBundlePem: hook.ca.certPem,
    failurePolicy: 'Ignore',
  });
  await registerWebhook(cluster, manifests.mutatingWebhookConfiguration, probe);
}
