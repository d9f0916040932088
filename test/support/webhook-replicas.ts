/**
 * The webhook Deployment played without a kubelet: each replica runs in this process under the
 * ServiceAccount's identity, with no certificate files (it serves what Secret
 * `rt-bootstrapper-webhook-tls` holds), and the deployment controller's report is simulated once
 * they serve. Checks made as the API server makes them: TLS with the Service's DNS name and
 * nothing but our registration's caBundle as trust.
 */
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  type V1MutatingWebhookConfiguration,
  type V1Pod,
} from '@kubernetes/client-node';
import { connect } from 'node:tls';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  RUNTIME_NAMESPACE,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_SERVICE,
  WEBHOOK_TLS_SECRET,
} from '../../src/api/runtime-names.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { reportDeploymentRollout } from '../../src/local/simulated-kubelet.js';
import type { ServingPolicy } from '../../src/serving-cert/serving-policy.js';
import type { ServingCertIssuer } from '../../src/serving-cert/serving-cert-keeper.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { startWebhookApp, type WebhookApp, type WebhookAppOptions } from '../../src/webhook/webhook-app.js';
import { eventually } from '../../src/envtest/eventually.js';
import { asWebhookServiceAccount } from './kcp.js';

/** The Service's DNS name, as the API server calls it. */
export const SERVICE_NAME = `${WEBHOOK_SERVICE}.${RUNTIME_NAMESPACE}.svc`;

/** A replica of the Deployment. */
export interface Replica {
  readonly identity: string;
  readonly app: WebhookApp;
}

/**
 * Starts a replica: the ServiceAccount's identity, no certificate files, the Pod's namespace, and
 * 127.0.0.1 among the names of a certificate it issues itself (a URL registration reaches it there).
 */
export async function startReplica(
  cluster: LocalCluster,
  identity: string,
  options: {
    readonly policy?: ServingPolicy;
    readonly issuer?: ServingCertIssuer;
    /** The runtime agent's admission policy (as the Deployment's `--admission-policy` says). */
    readonly admissionPolicy?: WebhookAppOptions['admissionPolicy'];
  } = {},
): Promise<Replica> {
  const app = await startWebhookApp({
    kubeConfig: await asWebhookServiceAccount(cluster),
    servingCert: {
      secret: { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_TLS_SECRET },
      extraSans: ['127.0.0.1'],
      identity,
      leaseTiming: { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 },
      ...(options.policy ? { policy: options.policy } : {}),
      ...(options.issuer ? { issuer: options.issuer } : {}),
    },
    host: '127.0.0.1',
    port: 0,
    logger: silentLogger(),
    admissionPolicy: options.admissionPolicy,
  });
  return { identity, app };
}

/** What the deployment controller and kubelets report: progressing at once, available once every replica is ready. */
export async function simulateRollout(cluster: LocalCluster, replicas: readonly Replica[]): Promise<void> {
  const kc = cluster.kubeConfig();
  await reportDeploymentRollout(kc, RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT, false);
  await eventually(
    () => (replicas.every((r) => r.app.ready()) ? true : undefined),
    60_000,
    'every replica ready',
  );
  await reportDeploymentRollout(kc, RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT, true);
}

/** Our MutatingWebhookConfiguration. */
export async function ourConfiguration(cluster: LocalCluster): Promise<V1MutatingWebhookConfiguration> {
  return cluster
    .kubeConfig()
    .makeApiClient(AdmissionregistrationV1Api)
    .readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
}

/** The caBundle (PEM) of our registration's first entry, if it has one. */
export async function caBundle(cluster: LocalCluster): Promise<string | undefined> {
  const c = await ourConfiguration(cluster);
  const b = c.webhooks?.[0]?.clientConfig.caBundle;
  return b ? Buffer.from(b, 'base64').toString('utf8') : undefined;
}

/**
 * TLS as the API server does it: the Service's DNS name, and nothing but `ca` as trust; `host` is
 * where the replica listens (a Pod's IP on a real node).
 */
export function handshake(port: number, ca: string, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, servername: SERVICE_NAME, ca, rejectUnauthorized: true }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => {
      resolve(false);
    });
  });
}

/** The URL at which our registration reaches the webhook on `port` (upstream's path). */
export const mutateUrl = (port: number): string => `https://127.0.0.1:${port}/mutate--v1-pod`;

/**
 * Points our registration at `port` by URL (kube-apiserver cannot route a Service to a loopback
 * process), keeping its caBundle, with failurePolicy Fail so that a failed call fails the Pod.
 */
export async function registerByUrl(cluster: LocalCluster, port: number): Promise<void> {
  const api = cluster.kubeConfig().makeApiClient(AdmissionregistrationV1Api);
  const current = await api.readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
  const hook = current.webhooks?.[0];
  if (!hook) throw new Error('our registration has no webhook entry');
  hook.clientConfig = {
    url: mutateUrl(port),
    ...(hook.clientConfig.caBundle ? { caBundle: hook.clientConfig.caBundle } : {}),
  };
  hook.failurePolicy = 'Fail';
  await api.replaceMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION, body: current });
}

/** Creates a Pod the seed config rewrites (`replace.me/app:1` → `ghcr.io/app:1`) in the webhook's namespace. */
export async function createSeedPod(cluster: LocalCluster, name: string): Promise<V1Pod> {
  return cluster
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespacedPod({
      namespace: RUNTIME_NAMESPACE,
      body: { metadata: { name }, spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }] } },
    });
}
