import { NODE_POOL_LABEL } from '../../src/api/kubelet-skew.js';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { kubeRequest } from '../../src/kube/kube-request.js';

/** The Node of pool `legacy` that the kubelet-skew tests put on a runtime (no kubelet runs it). */
export const LEGACY_NODE = 'legacy-0';

/**
 * Creates {@link LEGACY_NODE} in pool `legacy` unless it exists, and has it report `kubeletVersion`,
 * written through the status subresource as a kubelet writes it.
 */
export async function putLegacyNode(kc: ClusterAccess, kubeletVersion: string): Promise<void> {
  const path = `/api/v1/nodes/${LEGACY_NODE}`;
  const existing = await kubeRequest<unknown>(kc, { method: 'GET', path }).catch(() => undefined);
  if (existing === undefined)
    await kubeRequest(kc, {
      method: 'POST',
      path: '/api/v1/nodes',
      body: {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: LEGACY_NODE, labels: { [NODE_POOL_LABEL]: 'legacy' } },
      },
    });
  await kubeRequest(kc, {
    method: 'PATCH',
    path: `${path}/status`,
    contentType: 'application/merge-patch+json',
    body: { status: { nodeInfo: { kubeletVersion } } },
  });
}
