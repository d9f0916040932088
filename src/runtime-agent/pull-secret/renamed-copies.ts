import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import { COPIED_FROM_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../api/managed-labels.js';

/** How many pull-Secret names the record holds (the one in force among them): older ones are forgotten. */
export const REMEMBERED_NAMES_MAX = 8;

/** A Secret name is a DNS subdomain of at most this many characters. */
export const SECRET_NAME_MAX = 253;

/**
 * The most characters of the record read ({@link readRememberedNames}): its names, one a line.
 * The text is cut to it before it is split, so an edited record of any size costs this much.
 */
export const REMEMBERED_TEXT_MAX = REMEMBERED_NAMES_MAX * (SECRET_NAME_MAX + 1);

/**
 * Whether `name` is a DNS subdomain (RFC 1123: labels of `[a-z0-9-]` that start and end
 * alphanumeric, joined by dots, 253 characters at most): the names a Secret may have. One scan,
 * no regex.
 */
export function isSecretName(name: string): boolean {
  if (name.length === 0 || name.length > SECRET_NAME_MAX) return false;
  let prev = '.';
  for (const c of name) {
    const alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) {
      prev = c;
      continue;
    }
    if (c === '-') {
      if (prev === '.') return false;
    } else if (c === '.') {
      if (prev === '.' || prev === '-') return false;
    } else return false;
    prev = c;
  }
  return prev !== '.' && prev !== '-';
}

/**
 * The names a stored record holds (pure): cut to {@link REMEMBERED_TEXT_MAX} before it is split
 * (a line the cut broke is dropped), names that are no Secret name left out, duplicates once, at
 * most {@link REMEMBERED_NAMES_MAX}, newest first as written.
 */
export function readRememberedNames(text: string | undefined): string[] {
  if (text === undefined) return [];
  const cut = text.length > REMEMBERED_TEXT_MAX;
  const lines = text.slice(0, REMEMBERED_TEXT_MAX).split('\n');
  if (cut) lines.pop();
  const out: string[] = [];
  for (const line of lines) {
    if (out.length === REMEMBERED_NAMES_MAX) break;
    if (isSecretName(line) && !out.includes(line)) out.push(line);
  }
  return out;
}

/** The record's text for `names` (newest first, one a line). */
export function writeRememberedNames(names: readonly string[]): string {
  return names.join('\n');
}

/**
 * The record after the copier writes under `name` (pure): `name` first, the others after it,
 * the oldest dropped beyond {@link REMEMBERED_NAMES_MAX}. A name that is no Secret name changes nothing.
 */
export function rememberName(names: readonly string[], name: string): string[] {
  if (!isSecretName(name)) return [...names];
  return [name, ...names.filter((n) => n !== name)].slice(0, REMEMBERED_NAMES_MAX);
}

/** The names in `names` other than the one in force: those whose copies a sweep removes. */
export function earlierNames(names: readonly string[], current: string): string[] {
  return names.filter((n) => n !== current);
}

/**
 * Whether a Secret is a pull-Secret copy this webhook made: it carries our managed-by label and
 * the copied-from annotation, and that annotation names a source of the Secret's own name (the
 * copier always copies under the source's name, ./pull-secret-desired.ts). The KCP's own objects
 * carry the label but no such annotation, and a Secret without our label is never ours. The
 * API server applies the same test to the webhook's deletes (../render/webhook-secret-policy.ts).
 */
export function isOurCopy(meta: V1ObjectMeta): boolean {
  if (meta.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY_VALUE) return false;
  const from = meta.annotations?.[COPIED_FROM_ANNOTATION];
  if (from === undefined || meta.name === undefined) return false;
  const slash = from.indexOf('/');
  return slash > 0 && from.slice(slash + 1) === meta.name;
}

/** An earlier name that live Pods of a namespace still name, kept there for now. */
export interface KeptName {
  readonly name: string;
  /** How many Pods of the namespace still name it in `imagePullSecrets`. */
  readonly pods: number;
}

/** What to do in one namespace with the earlier pull-Secret names. */
export interface NamespacePlan {
  /** Names no live Pod of the namespace names: a Secret of that name there is deleted (if ours). */
  readonly remove: readonly string[];
  /** Names a live Pod of the namespace still names: left until that Pod is gone. */
  readonly kept: readonly KeptName[];
}

/** Whether a Pod may still pull an image: it has not ended (a Succeeded or Failed Pod never pulls again). */
function mayPull(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed';
}

/**
 * Decides, without I/O, which earlier pull-Secret names go from one namespace: a name is removed
 * unless a Pod of the namespace that has not ended still names it in `imagePullSecrets`. A
 * running Pod's `imagePullSecrets` cannot change, and its kubelet reads the Secret again
 * whenever it pulls (a container restarted with `imagePullPolicy: Always`, an image the node
 * collected): removing the copy under it would fail those pulls. Such a copy stays until the
 * last of those Pods is gone, and is then removed by a later sweep.
 */
export function planNamespaceSweep(input: {
  readonly names: readonly string[];
  readonly pods: readonly V1Pod[];
}): NamespacePlan {
  const remove: string[] = [];
  const kept: KeptName[] = [];
  for (const name of input.names) {
    const pods = input.pods.filter(
      (pod) => mayPull(pod) && (pod.spec?.imagePullSecrets ?? []).some((ref) => ref.name === name),
    ).length;
    if (pods === 0) remove.push(name);
    else kept.push({ name, pods });
  }
  return { remove, kept };
}

/** How a namespace answered for one earlier name. */
export type NameAnswer = 'removed' | 'absent' | 'not-ours' | 'kept' | 'failed';

/**
 * The earlier names a sweep leaves remembered (pure): those some namespace kept (a live Pod
 * names it) or failed on (its Pods unreadable, a delete that failed); a name every namespace
 * answered removed, absent or not ours for has no copy left and is forgotten.
 */
export function namesStillPending(answers: ReadonlyMap<string, readonly NameAnswer[]>): Set<string> {
  const out = new Set<string>();
  for (const [name, list] of answers) if (list.some((a) => a === 'kept' || a === 'failed')) out.add(name);
  return out;
}
