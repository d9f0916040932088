import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import { COPIED_FROM_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';

/** The label selector that finds every Secret rt-bootstrapper wrote (copies among them). */
export const MANAGED_SECRETS_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** One Secret, as far as the removal of renamed copies needs it. */
export interface SecretId {
  readonly namespace: string;
  readonly name: string;
  /** Deletes are conditioned on it: a Secret made again under the name since the list is kept. */
  readonly uid: string | undefined;
}

/** A stale copy that a live Pod still names, kept for now. */
export interface KeptCopy extends SecretId {
  /** How many Pods of its namespace still name it in `imagePullSecrets`. */
  readonly pods: number;
}

/** What to do with the copies of earlier pull-Secret names. */
export interface RenamedCopyPlan {
  /** Copies of an earlier name that no live Pod names: to delete. */
  readonly remove: readonly SecretId[];
  /** Copies of an earlier name that a live Pod still names: kept until that Pod is gone. */
  readonly kept: readonly KeptCopy[];
}

/**
 * Whether a Secret is a pull-Secret copy this webhook made: it carries our managed-by label and
 * the copied-from annotation, and that annotation names a source of the Secret's own name (the
 * copier always copies under the source's name, ./pull-secret-desired.ts). The KCP's own objects
 * carry the label but no such annotation, and a Secret without our label is never ours.
 */
export function isOurCopy(meta: V1ObjectMeta): boolean {
  if (meta.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY_VALUE) return false;
  const from = meta.annotations?.[COPIED_FROM_ANNOTATION];
  if (from === undefined || meta.name === undefined) return false;
  const slash = from.indexOf('/');
  return slash > 0 && from.slice(slash + 1) === meta.name;
}

/**
 * The copies among `secrets` that belong to an earlier pull-Secret name: ours ({@link isOurCopy})
 * and named otherwise than the pull Secret in force. The namespaces they are in are the only ones
 * whose Pods need to be read.
 */
export function renamedCopies(secrets: readonly V1ObjectMeta[], currentName: string): SecretId[] {
  const out: SecretId[] = [];
  for (const meta of secrets) {
    if (!isOurCopy(meta) || meta.name === currentName || meta.namespace === undefined) continue;
    out.push({ namespace: meta.namespace, name: meta.name ?? '', uid: meta.uid });
  }
  return out;
}

/** Whether a Pod may still pull an image: it has not ended (a Succeeded or Failed Pod never pulls again). */
function mayPull(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed';
}

/**
 * Decides, without I/O, which copies of earlier pull-Secret names go: a stale copy is removed
 * unless a Pod of its namespace that has not ended still names it in `imagePullSecrets`. A
 * running Pod's `imagePullSecrets` cannot change, and its kubelet reads the Secret again
 * whenever it pulls (a container restarted with `imagePullPolicy: Always`, an image the node
 * collected): removing the copy under it would fail those pulls. Such a copy stays until the
 * last of those Pods is gone, and is then removed by a later pass.
 *
 * `podsByNamespace` holds the Pods of each namespace that has a stale copy (a namespace missing
 * from it has none).
 */
export function planRenamedCopyRemoval(input: {
  readonly stale: readonly SecretId[];
  readonly podsByNamespace: ReadonlyMap<string, readonly V1Pod[]>;
}): RenamedCopyPlan {
  const remove: SecretId[] = [];
  const kept: KeptCopy[] = [];
  for (const copy of input.stale) {
    const pods = (input.podsByNamespace.get(copy.namespace) ?? []).filter(
      (pod) => mayPull(pod) && (pod.spec?.imagePullSecrets ?? []).some((ref) => ref.name === copy.name),
    ).length;
    if (pods === 0) remove.push(copy);
    else kept.push({ ...copy, pods });
  }
  return { remove, kept };
}
