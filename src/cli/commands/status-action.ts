import { rolloutPolicyPath, type RolloutPolicyResource } from '../../api/rollout-policy.js';
import { runtimeBootstrappersPath, type RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import { fleetStatus, formatFleetStatus } from '../../controller/rollout/fleet-status.js';
import { loadClusterAccess, type ClusterAccess } from '../../kube/cluster-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';

/**
 * The flags of `rtb status`. Here with the code that reads them: ./status.ts imports the type
 * only, so registering the command loads nothing of this file (and imports nothing back).
 */
export interface StatusFlags {
  kubeconfig?: string;
  namespace: string;
  rolloutPolicy: string;
  output: 'text' | 'json';
}

/** Reads the fleet from the KCP and renders it (text or JSON); `access` replaces the kubeconfig (tests). */
export async function runStatus(flags: StatusFlags, access?: ClusterAccess): Promise<string> {
  const kcp = access ?? (await loadClusterAccess(flags.kubeconfig));
  const list = await kubeRequest<{ items: RuntimeBootstrapper[] }>(kcp, {
    method: 'GET',
    path: runtimeBootstrappersPath(flags.namespace),
  });
  let policy: RolloutPolicyResource | undefined;
  try {
    policy = await kubeRequest<RolloutPolicyResource>(kcp, {
      method: 'GET',
      path: rolloutPolicyPath(flags.rolloutPolicy),
    });
  } catch (error) {
    if (statusCodeOf(error) !== 404) throw error;
  }
  const status = fleetStatus(list.items, policy);
  return flags.output === 'json' ? `${JSON.stringify(status, null, 2)}\n` : formatFleetStatus(status);
}
