import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1ContainerStatus,
} from '@kubernetes/client-node';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { applyObjects } from '../../src/kube/apply.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { renderWebhookManifests, webhookManifestList } from '../../src/render/webhook-manifests.js';
import type { WebhookManifestOptions } from '../../src/render/webhook-options.js';
import { seedConfigText } from './fixtures.js';
import { asWebhookServiceAccount } from './kcp.js';

/**
 * The rendered runtime manifests of `options` (by default an image and a URL that point at
 * nothing) without the webhook registrations: applied, they give the webhook its ServiceAccount,
 * RBAC and policies, and nothing calls it.
 */
export function unregisteredWebhookObjects(
  options: Partial<WebhookManifestOptions> = {},
): KubernetesObject[] {
  return webhookManifestList(
    renderWebhookManifests({ image: 'example.com/rtb:test', url: 'https://127.0.0.1:1/mutate', ...options }),
  ).filter((o) => !String((o as KubernetesObject).kind).endsWith('WebhookConfiguration'));
}

/**
 * Applies the rendered webhook manifests of direct mode without the registrations (its
 * ServiceAccount, RBAC and policies, `kyma-system`), and returns access as that ServiceAccount.
 */
export async function applyWebhookRights(cluster: LocalCluster): Promise<KubeConfig> {
  // Direct mode: the KCP issues the serving certificate and reads the status ConfigMap.
  await applyObjects(cluster.kubeConfig(), unregisteredWebhookObjects({ servingCertIssuer: 'external' }));
  return asWebhookServiceAccount(cluster);
}

/** A runtime cluster prepared for the webhook's parts, and the access the tests use. */
export interface WebhookRuntime {
  readonly cluster: LocalCluster;
  /** The cluster's admin access and its core API. */
  readonly admin: KubeConfig;
  readonly core: CoreV1Api;
  /** Access as the webhook's ServiceAccount (applyWebhookRights). */
  readonly sa: KubeConfig;
}

/** Applies the webhook's rights on `cluster` (applyWebhookRights) and returns the access to it. */
export async function webhookRuntime(cluster: LocalCluster): Promise<WebhookRuntime> {
  const admin = cluster.kubeConfig();
  return { cluster, admin, core: admin.makeApiClient(CoreV1Api), sa: await applyWebhookRights(cluster) };
}

/** Puts the seed's config and a pull Secret into `kyma-system` (created when absent), as KIM would. */
export async function putSeedConfig(cluster: LocalCluster): Promise<void> {
  const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: RUNTIME_NAMESPACE } } }).catch((error: unknown) => {
    if (statusCodeOf(error) !== 409) throw error;
  });
  await core.createNamespacedSecret({
    namespace: RUNTIME_NAMESPACE,
    body: { metadata: { name: 'registry-credentials' }, type: 'Opaque', data: { token: 'eA==' } },
  });
  await core.createNamespacedConfigMap({
    namespace: RUNTIME_NAMESPACE,
    body: {
      metadata: { name: 'rt-bootstrapper-config' },
      data: { 'rt-bootstrapper-config.json': seedConfigText() },
    },
  });
}

/** Replaces the webhook's config text in `kyma-system` with `text`: a live config change. */
export async function replaceConfigText(cluster: LocalCluster, text: string): Promise<void> {
  await cluster
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .replaceNamespacedConfigMap({
      name: 'rt-bootstrapper-config',
      namespace: RUNTIME_NAMESPACE,
      body: {
        metadata: { name: 'rt-bootstrapper-config' },
        data: { 'rt-bootstrapper-config.json': text },
      },
    });
}

/** Writes one container's status of a Pod through the status subresource, as its kubelet would. */
export async function writeContainerStatus(
  cluster: LocalCluster,
  namespace: string,
  pod: string,
  status: Partial<V1ContainerStatus> & { name: string; image: string },
): Promise<void> {
  await kubeRequest(cluster.kubeConfig(), {
    method: 'PATCH',
    path: `/api/v1/namespaces/${namespace}/pods/${pod}/status`,
    body: {
      status: {
        phase: 'Pending',
        containerStatuses: [{ imageID: '', ready: false, restartCount: 0, ...status }],
      },
    },
    parseResponse: false,
  });
}
