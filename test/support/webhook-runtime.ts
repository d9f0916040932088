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
import { seedConfigText } from './fixtures.js';
import { asWebhookServiceAccount } from './kcp.js';

/**
 * Applies the rendered webhook manifests of direct mode without the registrations (its
 * ServiceAccount, RBAC and policies, `kyma-system`), and returns access as that ServiceAccount.
 */
export async function applyWebhookRights(cluster: LocalCluster): Promise<KubeConfig> {
  const objects = webhookManifestList(
    renderWebhookManifests({
      image: 'example.com/rtb:test',
      url: 'https://127.0.0.1:1/mutate',
      // Direct mode: the KCP issues the serving certificate and reads the status ConfigMap.
      servingCertIssuer: 'external',
    }),
  ).filter(
    (o) => !String((o as KubernetesObject).kind).endsWith('WebhookConfiguration'),
  ) as KubernetesObject[];
  await applyObjects(cluster.kubeConfig(), objects);
  return asWebhookServiceAccount(cluster);
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
