import { AppsV1Api, type KubeConfig } from '@kubernetes/client-node';
import { statusCodeOf } from '../kube/kube-errors.js';

/**
 * Reports a Deployment as rolled out and available, as the deployment controller and kubelets
 * would. Local clusters run no kubelet and no controller-manager, so nothing else ever does;
 * resolves false when the Deployment does not exist (yet).
 */
export async function markDeploymentAvailable(
  kc: KubeConfig,
  namespace: string,
  name: string,
): Promise<boolean> {
  const apps = kc.makeApiClient(AppsV1Api);
  let d;
  try {
    d = await apps.readNamespacedDeployment({ name, namespace });
  } catch (error) {
    if (statusCodeOf(error) === 404) return false;
    throw error;
  }
  const replicas = d.spec?.replicas ?? 1;
  await apps.replaceNamespacedDeploymentStatus({
    name,
    namespace,
    body: {
      ...d,
      status: {
        observedGeneration: d.metadata?.generation ?? 1,
        replicas,
        updatedReplicas: replicas,
        readyReplicas: replicas,
        availableReplicas: replicas,
        conditions: [
          {
            type: 'Available',
            status: 'True',
            reason: 'MinimumReplicasAvailable',
            message: 'simulated kubelet',
          },
          // The deployment controller reports this too, and KIM's readiness check requires both.
          {
            type: 'Progressing',
            status: 'True',
            reason: 'NewReplicaSetAvailable',
            message: 'simulated kubelet',
          },
        ],
      },
    },
  });
  return true;
}
