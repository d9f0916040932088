/**
 * Reads which version of an API a cluster serves (./served-api.ts decides from the answers).
 */
import type { ClusterAccess } from './cluster-access.js';
import { statusCodeOf } from './kube-errors.js';
import { kubeRequest } from './kube-request.js';
import {
  nextDiscoveryStep,
  resourceNames,
  type ApiChoice,
  type ApiFamily,
  type GroupVersionAnswer,
} from './served-api.js';

/** Discovery itself failed (no answer, 403, 500…): nothing is known about the cluster. */
export class ApiDiscoveryError extends Error {
  override readonly name = 'ApiDiscoveryError';
}

/** One GET of a discovery path; the caller may wrap it (the installer's reachability). */
export type DiscoveryGet = (path: string) => Promise<unknown>;

/**
 * Reads discovery step by step ({@link nextDiscoveryStep}): a 404 means the version is not
 * served; any other failure rejects with {@link ApiDiscoveryError}.
 */
export async function discoverApi<V extends string>(
  family: ApiFamily<V>,
  get: DiscoveryGet,
): Promise<ApiChoice<V>> {
  const answers = new Map<V, GroupVersionAnswer>();
  for (;;) {
    const step = nextDiscoveryStep(family, answers);
    if ('done' in step) return step.done;
    try {
      answers.set(step.read, resourceNames(await get(step.path)));
    } catch (error) {
      if (statusCodeOf(error) !== 404) {
        const why = error instanceof Error ? error.message : String(error);
        throw new ApiDiscoveryError(`cannot discover the ${family.kind} API: ${why}`, { cause: error });
      }
      answers.set(step.read, 'absent');
    }
  }
}

/** A {@link DiscoveryGet} through `access`, each GET bounded by `timeoutMs`. */
export function discoveryGet(access: ClusterAccess, timeoutMs = 10_000): DiscoveryGet {
  return (path) => kubeRequest<unknown>(access, { method: 'GET', path, timeoutMs });
}
