import type { V1Secret } from '@kubernetes/client-node';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../src/api/managed-labels.js';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { KCP_PULL_SECRET } from './kcp.js';

/** The runtime's pull Secret path (`kyma-system/registry-credentials`). */
export const MANAGED_PULL_SECRET_PATH = `/api/v1/namespaces/${RUNTIME_NAMESPACE}/secrets/${KCP_PULL_SECRET}`;

/**
 * The pull Secret as the controller writes it to a runtime, with our managed-by label (what the
 * drift registration selects), holding `value`.
 */
export function managedPullSecret(value: string): V1Secret & { apiVersion: 'v1'; kind: 'Secret' } {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: KCP_PULL_SECRET,
      namespace: RUNTIME_NAMESPACE,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
    },
    data: { value: Buffer.from(value).toString('base64') },
  };
}
