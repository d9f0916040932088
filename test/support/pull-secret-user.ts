/** A Pod that keeps a copy of a pull Secret in use. */
import type { V1Pod } from '@kubernetes/client-node';

/**
 * A Pod `name` that names pull Secret `secret`: with no node to run it, it stays Pending, which
 * counts as live (a copy it names is in use).
 */
export function podNamingPullSecret(name: string, secret: string): V1Pod {
  return {
    metadata: { name },
    spec: {
      containers: [{ name: 'app', image: 'example.com/app:1' }],
      imagePullSecrets: [{ name: secret }],
    },
  };
}
