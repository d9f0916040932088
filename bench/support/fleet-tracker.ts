import type { KubernetesObject } from '@kubernetes/client-node';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { createListerWatcher } from '../../src/kube/list-watch.js';
import { Reflector } from '../../src/kube/reflector.js';
import { ChangeWaiters } from './change-waiters.js';

/** What the benchmark keeps of one object, with `performance.now()` when it was seen. */
export type Tracked<S> = S & { readonly at: number };

/**
 * A projection of every object of a collection as a watch delivers it (the product's reflector,
 * in the benchmark process), so "all N objects reached X" is timed by the watch event that made it
 * true, without listing thousands of objects again and again.
 */
export class FleetTracker<T extends KubernetesObject, S extends object> {
  private readonly seen = new Map<string, Tracked<S>>();
  private readonly changes = new ChangeWaiters();
  private readonly listeners = new Set<(name: string, s: Tracked<S>) => void>();
  private readonly reflector: Reflector<T>;

  constructor(access: ClusterAccess, path: string, project: (object: T) => S, name = 'bench fleet') {
    this.reflector = new Reflector<T>({ name, listerWatcher: createListerWatcher<T>(access, path) });
    const record = (object: T): void => {
      const name = object.metadata?.name ?? '';
      const tracked = { ...project(object), at: performance.now() };
      this.seen.set(name, tracked);
      for (const listener of this.listeners) listener(name, tracked);
      this.changes.notify();
    };
    this.reflector.addEventHandler({
      onAdd: record,
      onUpdate: (_old, object) => {
        record(object);
      },
    });
  }

  async start(): Promise<void> {
    this.reflector.start();
    await this.reflector.waitForSync();
  }

  /** Calls `listener` with every projection as it arrives, until the returned function is called. */
  listen(listener: (name: string, s: Tracked<S>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** How many objects satisfy `p`. */
  count(p: (s: Tracked<S>) => boolean): number {
    let n = 0;
    for (const s of this.seen.values()) if (p(s)) n++;
    return n;
  }

  /** Every object's projection. */
  all(): Tracked<S>[] {
    return [...this.seen.values()];
  }

  /**
   * Resolves once `expected` objects satisfy `p`, with the time of the last arrival among them;
   * rejects after `timeoutMs` saying how many did.
   */
  async until(expected: number, p: (s: Tracked<S>) => boolean, timeoutMs: number): Promise<number> {
    return this.changes.until(
      () => {
        const matching = this.all().filter(p);
        return matching.length >= expected ? Math.max(...matching.map((s) => s.at)) : undefined;
      },
      timeoutMs,
      () => `only ${this.all().filter(p).length} of ${expected} objects got there within ${timeoutMs} ms`,
    );
  }

  async stop(): Promise<void> {
    await this.reflector.stop();
  }
}
