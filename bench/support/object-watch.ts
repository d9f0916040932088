import { Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';

/** One watch event as this process received it. */
export interface SeenEvent<T extends KubernetesObject> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: T;
  /** `performance.now()` when the event arrived here. */
  readonly at: number;
}

/**
 * A watch on one object (by name) that keeps every event with its arrival time, so a benchmark
 * can ask "when did the first event after index i that satisfies p arrive", whether it came
 * before or after the question. Reconnects from the last resourceVersion if the API server
 * ends the watch.
 */
export class ObjectWatch<T extends KubernetesObject> {
  readonly events: SeenEvent<T>[] = [];
  private readonly waiters = new Set<() => void>();
  private abort: AbortController | undefined;
  private stopped = false;
  private lastRv: string | undefined;
  /** Watch connections made (1 unless the API server ended one). */
  connections = 0;

  constructor(
    private readonly kc: KubeConfig,
    /** Collection path, e.g. `/api/v1/namespaces/kyma-system/secrets`. */
    private readonly path: string,
    private readonly name: string,
  ) {}

  /** Opens the watch; resolves once the API server answered (the initial ADDED may follow). */
  async start(): Promise<void> {
    const query: Record<string, string> = { fieldSelector: `metadata.name=${this.name}` };
    if (this.lastRv !== undefined) query.resourceVersion = this.lastRv;
    this.connections++;
    this.abort = await new Watch(this.kc).watch(
      this.path,
      query,
      (type: string, object: T) => {
        if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return;
        this.lastRv = object.metadata?.resourceVersion ?? this.lastRv;
        this.events.push({ type, object, at: performance.now() });
        for (const wake of [...this.waiters]) wake();
      },
      () => {
        if (this.stopped) return;
        setTimeout(() => {
          if (!this.stopped) void this.start().catch(() => undefined);
        }, 100);
      },
    );
  }

  /** Index of the next event to arrive. */
  mark(): number {
    return this.events.length;
  }

  /**
   * The first event at or after index `from` satisfying `p`, waiting up to `timeoutMs`;
   * undefined on timeout.
   */
  async waitFor(
    from: number,
    p: (e: SeenEvent<T>) => boolean,
    timeoutMs: number,
  ): Promise<{ event: SeenEvent<T>; index: number } | undefined> {
    let checked = from;
    const scan = (): { event: SeenEvent<T>; index: number } | undefined => {
      for (; checked < this.events.length; checked++) {
        const event = this.events[checked];
        if (event && p(event)) return { event, index: checked };
      }
      return undefined;
    };
    const found = scan();
    if (found) return found;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(wake);
        resolve(undefined);
      }, timeoutMs);
      const wake = (): void => {
        const hit = scan();
        if (!hit) return;
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve(hit);
      };
      this.waiters.add(wake);
    });
  }

  /** The latest event (the object's last known state). */
  latest(): SeenEvent<T> | undefined {
    return this.events[this.events.length - 1];
  }

  /** Closes the watch. */
  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    for (const wake of [...this.waiters]) wake();
  }
}
