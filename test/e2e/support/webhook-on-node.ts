/**
 * The webhook on a real node, as upstream's e2e sets it up: the sources KIM copies to a runtime
 * (ConfigMap, pull Secret for the secured registry, ClusterTrustBundle), a config whose override
 * sends the open registry's images to the secured one, and the webhook's Deployment running from
 * the image in the open registry.
 */
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT } from '../../../src/api/runtime-names.js';
import { applyObjects } from '../../../src/kube/apply.js';
import { renderKimManifests } from '../../../src/render/kim-manifests.js';
import { renderWebhookManifests, webhookManifestList } from '../../../src/render/webhook-manifests.js';
import { packageVersion } from '../../../src/version.js';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { eventually } from '../../../src/envtest/eventually.js';
import { seedConfigText } from '../../support/fixtures.js';
import { kimConfigure, kimInstall, type KimSources } from '../../support/kim-installer.js';
import { useNodeLandscape, type NodeLandscape } from './node-landscape.js';
import { POD_READY_MS, POLL_MS } from './pods.js';

/** The parts of the webhook config the tests read. */
export interface E2eConfig {
  readonly overrides: Record<string, string>;
  readonly clusterTrustBundle: { readonly name: string; readonly certWritePath: string };
}

/** The seed config with upstream's e2e overrides: the seed's and the open registry → the secured one. */
export function e2eConfigText(l: NodeLandscape): string {
  const config = JSON.parse(seedConfigText()) as E2eConfig & Record<string, unknown>;
  // replace.me is the seed's registry (its Pod's image); the open registry is upstream's e2e's.
  const overrides = { 'replace.me': l.secured.host, [l.open.host]: l.secured.host };
  return JSON.stringify({ ...config, overrides }, null, 2);
}

export const e2eConfig = (l: NodeLandscape): E2eConfig => JSON.parse(e2eConfigText(l)) as E2eConfig;

/** The ClusterTrustBundle's signer: its name up to the last `:`, with `/` for the first `:`. */
export const signerOf = (bundleName: string): string => bundleName.split(':').slice(0, -1).join('/');

/** The sources as the KCP holds them, with a fresh CA as the trust bundle; returns the CA's PEM too. */
export async function e2eSources(l: NodeLandscape): Promise<{ sources: KimSources; caPem: string }> {
  const ca = await createCertificateAuthority({ commonName: 'e2e-trust-bundle' });
  const bundle = e2eConfig(l).clusterTrustBundle;
  return {
    caPem: ca.certPem,
    sources: {
      configMapData: { 'rt-bootstrapper-config.json': e2eConfigText(l) },
      pullSecret: {
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': Buffer.from(l.secured.dockerConfigJson()).toString('base64') },
      },
      clusterTrustBundle: {
        name: bundle.name,
        spec: { signerName: signerOf(bundle.name), trustBundle: ca.certPem },
      },
    },
  };
}

/** Namespace `kyma-system` and the sources in it, copied as KIM copies them. */
export async function configureRuntime(kc: KubeConfig, sources: KimSources): Promise<void> {
  try {
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: RUNTIME_NAMESPACE } } });
  } catch (error) {
    if (!String(error).includes('AlreadyExists')) throw error;
  }
  await kimConfigure(kc, sources);
}

const readWebhookDeployment = (kc: KubeConfig): Promise<V1Deployment> =>
  kc
    .makeApiClient(AppsV1Api)
    .readNamespacedDeployment({ name: WEBHOOK_DEPLOYMENT, namespace: RUNTIME_NAMESPACE });

/** Waits until the webhook Deployment is Available with every replica Ready (the real deployment controller's report). */
export function webhookAvailable(kc: KubeConfig): Promise<V1Deployment> {
  return eventually(
    async () => {
      const d = await readWebhookDeployment(kc);
      const available = d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True');
      const wanted = d.spec?.replicas ?? 1;
      return available && d.status?.readyReplicas === wanted && d.status.updatedReplicas === wanted
        ? d
        : undefined;
    },
    POD_READY_MS,
    'the webhook Deployment to be Available with every replica Ready',
    POLL_MS,
  );
}

/** The webhook's Pods (by the Deployment's selector). */
export async function webhookPods(kc: KubeConfig, deployment: V1Deployment): Promise<V1Pod[]> {
  const selector = Object.entries(deployment.spec?.selector.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const pods = await kc
    .makeApiClient(CoreV1Api)
    .listNamespacedPod({ namespace: RUNTIME_NAMESPACE, labelSelector: selector });
  return pods.items.filter((p) => !p.metadata?.deletionTimestamp);
}

/**
 * The last `tailLines` lines of each webhook Pod's log, one string per Pod headed by its name: what a
 * test prints when the webhook did not answer as it expected.
 */
export async function webhookLogs(kc: KubeConfig, tailLines = 60): Promise<string[]> {
  const core = kc.makeApiClient(CoreV1Api);
  const pods = await webhookPods(kc, await readWebhookDeployment(kc));
  return Promise.all(
    pods.map(async (pod) => {
      const name = pod.metadata?.name ?? '';
      const log = await core
        .readNamespacedPodLog({ name, namespace: RUNTIME_NAMESPACE, tailLines })
        .catch((error: unknown) => `(no log: ${String(error)})`);
      return `${name} (${pod.status?.podIP ?? 'no IP'}):\n${log}`;
    }),
  );
}

/**
 * GET through the API server's Pod proxy (the API server reaches Pod IPs on the node's bridge).
 * Failures are retried for a minute: once, on a machine at load 30, the API server's dial to a
 * Pod whose probes passed throughout timed out (503).
 */
export function podProxyGet(kc: KubeConfig, pod: V1Pod, port: number, path: string): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const name = `${pod.metadata?.name ?? ''}:${port}`;
  const namespace = pod.metadata?.namespace ?? '';
  return eventually(
    () => core.connectGetNamespacedPodProxyWithPath({ name, namespace, path }),
    60_000,
    `${path} of Pod ${namespace}/${name} through the API server`,
  );
}

/** How the webhook gets onto the runtime. */
export type InstallWay = 'kim' | 'apply';

/** The webhook installed on a landscape's node, with its sources. */
export interface WebhookOnNode {
  readonly landscape: NodeLandscape;
  readonly kc: KubeConfig;
  readonly sources: KimSources;
  /** The trust bundle's first PEM (the CA in `sources`). */
  readonly caPem: string;
  /** KIM's `manifests.yaml` (for `kimStatus`). */
  readonly kimManifests: string;
}

/**
 * Starts the calling file's landscape and installs the webhook from the open registry's image on
 * it (before its tests; nothing waits for the rollout): `kim` copies the sources and applies
 * `renderKimManifests` as KIM's code does, `apply` applies `renderWebhookManifests` as our
 * installer does. `apiserverArgs` are extra kube-apiserver flags (useNodeLandscape's).
 */
export function useWebhookOnNode(
  way: InstallWay,
  apiserverArgs: readonly string[] = [],
): () => WebhookOnNode {
  let installed: WebhookOnNode | undefined;
  useNodeLandscape(
    async (l) => {
      const kc = l.plane.cluster('runtime').kubeConfig();
      const { sources, caPem } = await e2eSources(l);
      await configureRuntime(kc, sources);
      const version = packageVersion();
      const kimManifests = renderKimManifests({ image: l.openImage, version }).text;
      if (way === 'kim') await kimInstall(kc, kimManifests);
      else
        await applyObjects(kc, webhookManifestList(renderWebhookManifests({ image: l.openImage, version })));
      installed = { landscape: l, kc, sources, caPem, kimManifests };
    },
    'runtime',
    [],
    apiserverArgs,
  );
  return () => {
    if (!installed) throw new Error('the webhook is not installed (use it inside a test)');
    return installed;
  };
}
