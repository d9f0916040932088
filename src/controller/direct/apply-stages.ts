/**
 * Which of a pass's applies may go to a runtime together (pure). A runtime far away answers each
 * request a round trip later, and an install applies about twenty objects: one after the other
 * they cost twenty round trips, where most of them need nothing of each other at creation.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { isSetObject } from './set-writes.js';

/**
 * Kinds that nothing else in a plan needs at the time it is written: the API server stores each
 * without looking at the others (RBAC, policies and bindings name what they refer to; a Service or
 * NetworkPolicy selects Pods by label; the webhook configurations are registered together, after
 * their backend). Everything else waits for what comes before it in the plan: a Namespace for
 * what it holds, the Deployment for its ServiceAccount, rights and mounted Secrets (its Pods would
 * fail to be created or to start without them), and the set's objects one by one (trust bundle,
 * pull Secret, ConfigMap: never half a set).
 */
const INDEPENDENT_KINDS: ReadonlySet<string> = new Set([
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'Secret',
  'Service',
  'NetworkPolicy',
  'PodDisruptionBudget',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
]);

/** Whether `o` may be applied together with its independent neighbours. */
function independent(o: KubernetesObject): boolean {
  return INDEPENDENT_KINDS.has(o.kind ?? '') && !isSetObject(o);
}

/**
 * `objects` (in apply order) cut into stages, in order: a stage is a run of neighbouring
 * independent objects, or one object that must follow everything before it. Every object of a
 * stage is stored before the next stage starts; within a stage the order is free.
 */
export function applyStages(objects: readonly KubernetesObject[]): KubernetesObject[][] {
  const stages: KubernetesObject[][] = [];
  let run: KubernetesObject[] | undefined;
  for (const o of objects) {
    if (!independent(o)) {
      stages.push([o]);
      run = undefined;
    } else if (run === undefined) {
      run = [o];
      stages.push(run);
    } else run.push(o);
  }
  return stages;
}

/**
 * Runs `applyOne` over `objects` stage by stage ({@link applyStages}), at most `parallel` at once
 * within a stage (a runtime's client has that many connections: more would wait in its queue with
 * their deadlines running). A stage ends only when all of its applies have ended, so nothing is in
 * flight when this returns or throws; the first failure in apply order is thrown, and no later
 * stage starts.
 */
export async function applyInStages(
  objects: readonly KubernetesObject[],
  parallel: number,
  applyOne: (o: KubernetesObject) => Promise<void>,
): Promise<void> {
  for (const stage of applyStages(objects)) {
    let failed: { index: number; error: unknown } | undefined;
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < stage.length; i = next++) {
        const o = stage[i];
        if (o === undefined) continue;
        try {
          await applyOne(o);
        } catch (error) {
          if (failed === undefined || i < failed.index) failed = { index: i, error };
          // The stage's failure is known: start nothing more of it.
          next = stage.length;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(parallel, stage.length)) }, worker));
    if (failed !== undefined) throw failed.error;
  }
}
