import { AppsV1Api, type KubeConfig } from '@kubernetes/client-node';
import { statusCodeOf } from '../kube/kube-errors.js';

/**
 * Reports a Deployment's rollout as the deployment controller and kubelets would: Progressing at
 * once, and every replica ready and Available when `available`. Local clusters run no kubelet and
 * no controller-manager, so nothing else ever does; resolves false when the Deployment does not
 * exist (yet).
 */
export async function reportDeploymentRollout(
  kc: KubeConfig,
  namespace: string,
  name: string,
  available: boolean,
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
  const ready = available ? replicas : 0;
  await apps.replaceNamespacedDeploymentStatus({
    name,
    namespace,
    body: {
      ...d,
      status: {
        observedGeneration: d.metadata?.generation ?? 1,
        replicas,
        updatedReplicas: replicas,
        readyReplicas: ready,
        availableReplicas: ready,
        conditions: [
          {
            type: 'Available',
            status: available ? 'True' : 'False',
            reason: available ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
            message: 'simulated kubelet',
          },
          // The deployment controller reports this too, and KIM's readiness check requires both.
          {
            type: 'Progressing',
            status: 'True',
            reason: available ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated',
            message: 'simulated kubelet',
          },
        ],
      },
    },
  });
  return true;
}

/** Reports a Deployment as rolled out and available ({@link reportDeploymentRollout}). */
export function markDeploymentAvailable(kc: KubeConfig, namespace: string, name: string): Promise<boolean> {
  return reportDeploymentRollout(kc, namespace, name, true);
}
