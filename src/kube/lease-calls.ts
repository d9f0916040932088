import type { V1Lease } from '@kubernetes/client-node';
import type { ClusterAccess } from './cluster-access.js';
import { statusCodeOf } from './kube-errors.js';
import { kubeRequest } from './kube-request.js';

/** The three Lease calls of an election, each bounded by a timeout (a hung renewal must not outlive the deadline). */
export interface LeaseCalls {
  /** The Lease, or undefined when it does not exist. */
  read(timeoutMs: number): Promise<V1Lease | undefined>;
  create(lease: V1Lease, timeoutMs: number): Promise<V1Lease>;
  replace(lease: V1Lease, timeoutMs: number): Promise<V1Lease>;
}

/** The Lease `namespace/name`'s calls over `access`. */
export function leaseCalls(access: ClusterAccess, namespace: string, name: string): LeaseCalls {
  const leases = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  const one = `${leases}/${encodeURIComponent(name)}`;
  return {
    async read(timeoutMs) {
      try {
        return await kubeRequest<V1Lease>(access, { method: 'GET', path: one, timeoutMs });
      } catch (err) {
        if (statusCodeOf(err) === 404) return undefined;
        throw err;
      }
    },
    create: (lease, timeoutMs) =>
      kubeRequest<V1Lease>(access, { method: 'POST', path: leases, body: lease, timeoutMs }),
    replace: (lease, timeoutMs) =>
      kubeRequest<V1Lease>(access, { method: 'PUT', path: one, body: lease, timeoutMs }),
  };
}
