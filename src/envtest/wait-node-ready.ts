import type { CoreV1Api } from '@kubernetes/client-node';
import { ControlPlaneError } from './errors.js';
import type { ManagedProcess } from './managed-process.js';

/**
 * Polls the Node until its Ready condition is True and the `default` ServiceAccount exists
 * (Pods are refused before kube-controller-manager made it); fails early, with the log tail,
 * when one of the node's processes exits.
 */
export async function waitNodeReady(
  api: CoreV1Api,
  name: string,
  processes: readonly ManagedProcess[],
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no Node yet';
  while (Date.now() < deadline) {
    const dead = processes.find((p) => !p.running);
    if (dead) throw new ControlPlaneError(`${dead.name} exited while starting; log tail:\n${dead.logTail()}`);
    try {
      const node = await api.readNode({ name });
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      last = `Ready=${ready?.status ?? 'unknown'} (${ready?.message ?? ''})`;
      if (ready?.status === 'True') {
        await api.readNamespacedServiceAccount({ name: 'default', namespace: 'default' });
        return;
      }
    } catch (error) {
      last = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const tails = processes.map((p) => `--- ${p.name}:\n${p.logTail(15)}`).join('\n');
  throw new ControlPlaneError(`node ${name} was not Ready within ${timeoutMs} ms: ${last}\n${tails}`);
}
