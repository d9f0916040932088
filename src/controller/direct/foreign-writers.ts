/**
 * Who else writes our objects on a runtime (pure). After direct mode takes over a runtime that
 * KIM installed, KIM must stop: if it keeps applying its manifests, the two fight over every
 * field. Server-side apply records each writer in `metadata.managedFields` with the time of its
 * last write, which tells an active writer from a stale entry.
 */

import { KIM_FIELD_MANAGER } from '../../api/runtime-names.js';

/** One `metadata.managedFields` entry, as far as this needs it. */
export interface ManagedFieldsEntry {
  readonly manager?: string;
  readonly operation?: string;
  readonly time?: string | Date;
}

/** An object as read from the runtime, with a name for messages. */
export interface WrittenObject {
  /** E.g. `Deployment kyma-system/rt-bootstrapper-controller-manager`. */
  readonly description: string;
  readonly managedFields?: readonly ManagedFieldsEntry[];
}

/** A foreign manager that wrote an object after our last write to it. */
export interface ForeignWrite {
  readonly object: string;
  readonly manager: string;
  readonly time: string;
}

const millis = (t: string | Date | undefined): number =>
  t === undefined ? Number.NaN : new Date(t).getTime();

/**
 * The writes by `watched` managers that came after our own last write to the same object.
 * An entry older than ours is what a past writer still owns (fields we do not set), not a
 * writer that is still active; the times have a resolution of one second, so only a strictly
 * later write counts.
 */
export function foreignWritesAfterOurs(
  objects: readonly WrittenObject[],
  ownManagers: readonly string[],
  watched: readonly string[] = [KIM_FIELD_MANAGER],
): ForeignWrite[] {
  const out: ForeignWrite[] = [];
  for (const o of objects) {
    const entries = o.managedFields ?? [];
    const ours = entries.filter((e) => e.manager !== undefined && ownManagers.includes(e.manager));
    if (ours.length === 0) continue;
    const ourLast = Math.max(...ours.map((e) => millis(e.time)).filter((t) => !Number.isNaN(t)));
    for (const e of entries) {
      if (e.manager === undefined || !watched.includes(e.manager)) continue;
      const t = millis(e.time);
      if (!Number.isNaN(t) && t > ourLast)
        out.push({ object: o.description, manager: e.manager, time: new Date(t).toISOString() });
    }
  }
  return out;
}

/** One line for a condition message: who, what, when, and what to do. */
export function describeForeignWrites(writes: readonly ForeignWrite[]): string {
  const first = writes[0];
  if (!first) return 'only rt-bootstrapper writes its objects on the runtime';
  const more = writes.length > 1 ? ` (and ${writes.length - 1} more)` : '';
  return `${first.manager} wrote ${first.object} at ${first.time}, after rt-bootstrapper${more}: disable KIM's runtime bootstrapper for this runtime, or the two keep overwriting each other`;
}
