/**
 * The reflector's cache: objects by `namespace/name` (or `name` when cluster-scoped),
 * as client-go's thread-safe Store with `MetaNamespaceKeyFunc`. Mutations return the
 * change they made so the reflector can turn them into handler calls.
 */

/** The part of a Kubernetes object the store needs. */
export interface KubeObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** An object without a name cannot be stored. */
export class StoreKeyError extends Error {
  override readonly name = 'StoreKeyError';
}

/** `namespace/name`, or `name` for cluster-scoped objects (client-go's `MetaNamespaceKeyFunc`). */
export function objectKey(obj: KubeObject): string {
  const name = obj.metadata?.name;
  if (name === undefined || name === '') throw new StoreKeyError('object has no metadata.name');
  const ns = obj.metadata?.namespace;
  return ns === undefined || ns === '' ? name : `${ns}/${name}`;
}

/** A change the store made. `finalStateUnknown` marks deletions only inferred from a relist. */
export type StoreChange<T> =
  | { readonly type: 'add'; readonly obj: T }
  | { readonly type: 'update'; readonly old: T; readonly obj: T }
  | { readonly type: 'delete'; readonly obj: T; readonly finalStateUnknown: boolean };

/** Read access to a store, as handed to consumers of a reflector. */
export interface ReadonlyStore<T> {
  readonly size: number;
  get(key: string): T | undefined;
  has(key: string): boolean;
  keys(): string[];
  list(): T[];
}

/** Objects of one resource by key. */
export class Store<T extends KubeObject> implements ReadonlyStore<T> {
  private items = new Map<string, T>();

  get size(): number {
    return this.items.size;
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  has(key: string): boolean {
    return this.items.has(key);
  }

  keys(): string[] {
    return [...this.items.keys()];
  }

  list(): T[] {
    return [...this.items.values()];
  }

  /** Add or replace `obj`. */
  upsert(obj: T): StoreChange<T> {
    const key = objectKey(obj);
    const old = this.items.get(key);
    this.items.set(key, obj);
    return old === undefined ? { type: 'add', obj } : { type: 'update', old, obj };
  }

  /** Remove the object with `obj`'s key; undefined if it was not there. */
  remove(obj: T): StoreChange<T> | undefined {
    const key = objectKey(obj);
    if (!this.items.delete(key)) return undefined;
    return { type: 'delete', obj, finalStateUnknown: false };
  }

  /**
   * Replace the whole content at once with a fresh list and return the difference:
   * new keys are adds, keys whose resourceVersion changed are updates, vanished keys
   * are deletions with their last known state. Objects with an unchanged
   * resourceVersion yield nothing, so a relist is never a spurious update.
   */
  replace(objs: readonly T[]): StoreChange<T>[] {
    const next = new Map<string, T>();
    for (const obj of objs) next.set(objectKey(obj), obj);
    const changes: StoreChange<T>[] = [];
    for (const [key, obj] of next) {
      const old = this.items.get(key);
      if (old === undefined) changes.push({ type: 'add', obj });
      else if (
        old.metadata?.resourceVersion !== obj.metadata?.resourceVersion ||
        old.metadata?.resourceVersion === undefined
      ) {
        changes.push({ type: 'update', old, obj });
      }
    }
    for (const [key, old] of this.items) {
      if (!next.has(key)) changes.push({ type: 'delete', obj: old, finalStateUnknown: true });
    }
    this.items = next;
    return changes;
  }
}
