import { ApiextensionsV1Api, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { applyObjects } from './apply.js';

/** Applies CRDs and waits until the API server serves them (condition Established). */
export async function ensureCrds(
  kc: KubeConfig,
  crds: readonly KubernetesObject[],
  timeoutMs = 30_000,
): Promise<void> {
  await applyObjects(kc, crds);
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    const name = crd.metadata?.name ?? '';
    for (;;) {
      const current = await api.readCustomResourceDefinition({ name });
      if (current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not established within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
