/**
 * Writes the serving Secret as the protocol's writers do (the webhook's elected replica, the KCP):
 * a create when there is none, else a replace carrying the resourceVersion the step was planned
 * from, so a concurrent write fails with 409 and the writer plans again.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { kubeRequest } from '../kube/kube-request.js';
import type { ServingSecretContent } from './serving-secret-state.js';
import { servingSecretBody } from './serving-secret-codec.js';

/** Creates or replaces the Secret `ref` (`current` as read) with `next`; resolves with it as written. */
export async function putServingSecret(
  access: ClusterAccess,
  ref: { readonly namespace: string; readonly name: string },
  current: V1Secret | undefined,
  next: ServingSecretContent,
  options: { readonly fieldManager?: string; readonly timeoutMs?: number } = {},
): Promise<V1Secret> {
  const collection = `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/secrets`;
  return await kubeRequest<V1Secret>(access, {
    method: current ? 'PUT' : 'POST',
    path: current ? `${collection}/${encodeURIComponent(ref.name)}` : collection,
    body: servingSecretBody(ref, current, next),
    query: { fieldManager: options.fieldManager },
    timeoutMs: options.timeoutMs ?? 15_000,
  });
}
