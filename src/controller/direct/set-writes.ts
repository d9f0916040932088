/**
 * Which objects of the versioned set a pass writes to a runtime (pure), and the in-process record
 * of what the passes wrote there that the decision is made from. A change of one source costs a
 * runtime the changed object alone: the runtime computes the set's version from the content
 * versions its objects carry (../../api/set-version.ts; docs/controller.md, "what a pass writes").
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { CONTENT_VERSION_ANNOTATION, UNWRITTEN_BUNDLE_ANNOTATION } from '../../api/set-version.js';

/** What the passes of this process wrote to one runtime of the set, as far as it knows. */
export interface WrittenRecord {
  /** {@link setObjectKey} → {@link writtenVersionOf} at the object's last successful write. */
  readonly versions: ReadonlyMap<string, string>;
  /** The set version of the last pass whose writes of the set were all stored. */
  readonly committed: string | undefined;
}

/** What {@link setWrites} weighs besides the planned objects. */
export interface SetWritesInput {
  /** What this process wrote to the runtime; undefined: nothing (a restart, a new replica). */
  readonly written: WrittenRecord | undefined;
  /** The set the RuntimeBootstrapper's status says the runtime holds (`status.appliedVersion`). */
  readonly held: string | undefined;
  /** A forced pass (periodic full resync, drift repair, a resync asked for, install, upgrade). */
  readonly full: boolean;
}

/** The identity of a set object on a runtime: kind, namespace and name (not the apiVersion it is written at). */
export function setObjectKey(o: KubernetesObject): string {
  return `${o.kind ?? ''}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

/**
 * What an object written to a runtime holds, as far as the set decides it: its content version
 * and, on the ConfigMap, the version of a bundle the set counts but does not write. A Namespace
 * holds nothing of ours but its name.
 */
export function writtenVersionOf(o: KubernetesObject): string {
  const a = o.metadata?.annotations ?? {};
  const content = a[CONTENT_VERSION_ANNOTATION] ?? (o.kind === 'Namespace' ? 'namespace' : '');
  const unwritten = a[UNWRITTEN_BUNDLE_ANNOTATION];
  return unwritten === undefined ? content : `${content}/${unwritten}`;
}

/**
 * The objects of `planned` (in apply order, which is kept) that a pass writes: every one on a full
 * pass, or when the record cannot be trusted: nothing written by this process, or the set it last
 * committed is not the one the status says the runtime holds (another replica wrote there since,
 * or this process's own last commit is not in the status yet); otherwise those whose content
 * differs from what this process last wrote.
 */
export function setWrites(
  planned: readonly KubernetesObject[],
  input: SetWritesInput,
): readonly KubernetesObject[] {
  const { written, held, full } = input;
  if (full || written === undefined || written.committed === undefined || written.committed !== held)
    return planned;
  return planned.filter((o) => written.versions.get(setObjectKey(o)) !== writtenVersionOf(o));
}

/**
 * What the passes of this process wrote of the set to one runtime, per API server its kubeconfig
 * named (a runtime rebuilt under the same ID starts from nothing known, so it gets the whole set).
 * In memory only; a restart starts empty, and the first pass then writes the whole set. Fed with
 * every set object a write stored, whichever pass wrote it (reconcile or drift repair). Each
 * runtime's ledger lives in its record (./runtime-record.ts).
 */
export class SetLedger {
  private readonly entries = new Map<string, { versions: Map<string, string>; committed?: string }>();

  /** Notes that `object` of the set was written to the runtime through `server` (the API server stored it). */
  wrote(server: string, object: KubernetesObject): void {
    let entry = this.entries.get(server);
    if (entry === undefined) {
      entry = { versions: new Map() };
      this.entries.set(server, entry);
    }
    entry.versions.set(setObjectKey(object), writtenVersionOf(object));
  }

  /** Notes that every write of set `version` a pass sent through `server` was stored. */
  committed(server: string, version: string): void {
    const entry = this.entries.get(server);
    if (entry === undefined) this.entries.set(server, { versions: new Map(), committed: version });
    else entry.committed = version;
  }

  /** What was written through `server`; undefined when nothing is known. */
  get(server: string): WrittenRecord | undefined {
    const entry = this.entries.get(server);
    return entry === undefined ? undefined : { versions: entry.versions, committed: entry.committed };
  }

  /** Forgets what was written through `server` (our objects were removed, or may have changed unseen). */
  forget(server: string): void {
    this.entries.delete(server);
  }

  /** Forgets every server's record: another replica may have written there since. */
  clear(): void {
    this.entries.clear();
  }

  /** Servers with a record (tests). */
  get size(): number {
    return this.entries.size;
  }
}

/** Whether `o` is an object of the set the ledger records (not one of the webhook's). */
export function isSetObject(o: KubernetesObject): boolean {
  return o.kind === 'Namespace' || o.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION] !== undefined;
}
