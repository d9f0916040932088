import type { V1Namespace, V1Secret } from '@kubernetes/client-node';
import { WEBHOOK_API_CALL_TIMEOUT_MS } from '../api/serving-limits.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { kubeRequest } from '../kube/kube-request.js';
import type { NamespaceReads } from './namespace-lookup.js';
import type { SecretWrites } from './pull-secret-copier.js';

/**
 * The four core/v1 calls the webhook makes, as raw requests (`kubeRequest`) instead of
 * client-node's generated `CoreV1Api`, which would load every generated API and model into the
 * process. Same paths, query parameters and bodies as the generated client; failures are
 * `KubeApiError`s carrying the HTTP status (`statusCodeOf`). A call without an answer for
 * `timeoutMs` fails: the namespace read and the Secret create run on the admission path.
 */
export function coreCalls(
  access: ClusterAccess,
  timeoutMs = WEBHOOK_API_CALL_TIMEOUT_MS,
): NamespaceReads & SecretWrites {
  const secrets = (namespace: string): string =>
    `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
  return {
    readNamespace: ({ name }) =>
      kubeRequest<V1Namespace>(access, {
        method: 'GET',
        path: `/api/v1/namespaces/${encodeURIComponent(name)}`,
        timeoutMs,
      }),
    createNamespacedSecret: ({ namespace, body, fieldManager }) =>
      kubeRequest<V1Secret>(access, {
        method: 'POST',
        path: secrets(namespace),
        query: { fieldManager },
        body,
        timeoutMs,
      }),
    replaceNamespacedSecret: ({ name, namespace, body, fieldManager }) =>
      kubeRequest<V1Secret>(access, {
        method: 'PUT',
        path: `${secrets(namespace)}/${encodeURIComponent(name)}`,
        query: { fieldManager },
        body,
        timeoutMs,
      }),
    deleteNamespacedSecret: ({ name, namespace }) =>
      kubeRequest<unknown>(access, {
        method: 'DELETE',
        path: `${secrets(namespace)}/${encodeURIComponent(name)}`,
        timeoutMs,
      }),
  };
}
