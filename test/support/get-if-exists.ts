import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';

/** GET of the object at `path`, or undefined where the API server answers 404 (any other error is thrown). */
export async function getIfExists<T>(kc: ClusterAccess, path: string): Promise<T | undefined> {
  try {
    return await kubeRequest<T>(kc, { method: 'GET', path });
  } catch (error) {
    if (statusCodeOf(error) === 404) return undefined;
    throw error;
  }
}
