import type { V1Deployment, V1DeploymentStatus } from '@kubernetes/client-node';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { statusCodeOf } from '../kube/kube-errors.js';
import { kubeRequest } from '../kube/kube-request.js';

/** The status the deployment controller and kubelets would report for `d` (pure). */
function rolloutStatus(d: V1Deployment, available: boolean): V1DeploymentStatus {
  const replicas = d.spec?.replicas ?? 1;
  const ready = available ? replicas : 0;
  return {
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
  };
}

/**
 * Whether `current` holds every field of `desired` (the API server adds condition times, null here).
 */
function alreadySays(current: V1DeploymentStatus | undefined, desired: V1DeploymentStatus): boolean {
  const { conditions, ...counts } = desired;
  if (current === undefined) return false;
  // Counts of 0 are left out of what the API server answers.
  if (!Object.entries(counts).every(([k, v]) => (current[k as keyof V1DeploymentStatus] ?? 0) === v))
    return false;
  const held = current.conditions ?? [];
  return (
    held.length === (conditions ?? []).length &&
    (conditions ?? []).every((c) =>
      held.some(
        (h) => h.type === c.type && h.status === c.status && h.reason === c.reason && h.message === c.message,
      ),
    )
  );
}

/**
 * Reports a Deployment's rollout as the deployment controller and kubelets would: Progressing at
 * once, and every replica ready and Available when `available`. Local clusters run no kubelet and
 * no controller-manager, so nothing else ever does; resolves false when the Deployment does not
 * exist (yet). A status that already says so is not written again, as those controllers do not.
 */
export async function reportDeploymentRollout(
  kc: ClusterAccess,
  namespace: string,
  name: string,
  available: boolean,
): Promise<boolean> {
  const path = `/apis/apps/v1/namespaces/${encodeURIComponent(namespace)}/deployments/${encodeURIComponent(name)}`;
  let d: V1Deployment;
  try {
    d = await kubeRequest<V1Deployment>(kc, { method: 'GET', path });
  } catch (error) {
    if (statusCodeOf(error) === 404) return false;
    throw error;
  }
  const status = rolloutStatus(d, available);
  if (alreadySays(d.status, status)) return true;
  await kubeRequest(kc, {
    method: 'PUT',
    path: `${path}/status`,
    body: { ...d, status },
    parseResponse: false,
  });
  return true;
}

/** Reports a Deployment as rolled out and available ({@link reportDeploymentRollout}). */
export function markDeploymentAvailable(
  kc: ClusterAccess,
  namespace: string,
  name: string,
): Promise<boolean> {
  return reportDeploymentRollout(kc, namespace, name, true);
}
