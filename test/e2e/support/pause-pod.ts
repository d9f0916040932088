import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { eventually } from '../../../src/envtest/eventually.js';

/** Creates a Pod running the node's own pause image (never pulled) and waits until it runs. */
export async function startPausePod(core: CoreV1Api, image: string, name = 'pause'): Promise<V1Pod> {
  await core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name },
      spec: { containers: [{ name: 'pause', image, imagePullPolicy: 'Never' }] },
    },
  });
  return eventually(
    async () => {
      const pod = await core.readNamespacedPod({ name, namespace: 'default' });
      return pod.status?.phase === 'Running' ? pod : undefined;
    },
    120_000,
    `Pod ${name} to run`,
  );
}
