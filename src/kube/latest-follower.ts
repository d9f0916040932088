/** How a {@link LatestFollower} starts and stops the thing it keeps for a key. */
export interface FollowerHooks<K, T> {
  /** Starts the thing for `key` (synchronously; it may keep working in the background). */
  start(key: K): T;
  /** Stops it; the next start waits for this. */
  stop(running: T): Promise<void>;
  /** Whether two keys ask for the same thing (no restart then). */
  same(a: K, b: K): boolean;
  /**
   * A start or stop that failed. After a failed stop the follower goes on (the thing is dropped
   * either way); after a failed start nothing runs until the next {@link LatestFollower.follow}.
   */
  onError(error: unknown, phase: 'start' | 'stop'): void;
}

/**
 * Keeps exactly one thing running for the latest key it was given, whatever the timing of
 * changes: a change stops the running thing and starts the next only once that stop completed;
 * changes that arrive while a stop is pending coalesce, so only the latest key is started. Two
 * things never run at once (two pull-Secret copiers would copy both Secrets).
 */
export class LatestFollower<K, T> {
  private desired: { readonly key: K } | undefined;
  private active: { readonly key: K; readonly value: T } | undefined;
  // True while the loop runs; cleared in the same synchronous step as its last check, so a
  // key given right after that check always starts a new loop instead of being missed.
  private looping = false;
  private loop: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly hooks: FollowerHooks<K, T>) {}

  /** The running thing, or undefined while switching (or before the first key, after close). */
  get current(): T | undefined {
    return this.active?.value;
  }

  /** The key of the running thing. */
  get currentKey(): K | undefined {
    return this.active?.key;
  }

  /**
   * Follows `key`: nothing happens if it is running already; otherwise the running thing is
   * stopped, then `key`'s started. Starts at once (synchronously) when nothing must stop first.
   */
  follow(key: K): void {
    if (this.closed) return;
    this.desired = { key };
    if (this.looping) return;
    this.looping = true;
    this.loop = this.run();
  }

  /** Stops following: waits for a switch under way, then stops the running thing. */
  async close(): Promise<void> {
    this.closed = true;
    await this.loop;
    const active = this.active;
    this.active = undefined;
    if (active) await this.stopQuietly(active.value);
  }

  private async run(): Promise<void> {
    for (;;) {
      const desired = this.desired;
      const active = this.active;
      if (this.closed || desired === undefined || (active && this.hooks.same(active.key, desired.key))) {
        this.looping = false;
        return;
      }
      if (active) {
        this.active = undefined;
        await this.stopQuietly(active.value);
      } else {
        try {
          this.active = { key: desired.key, value: this.hooks.start(desired.key) };
        } catch (error) {
          this.desired = undefined;
          this.hooks.onError(error, 'start');
        }
      }
    }
  }

  private async stopQuietly(value: T): Promise<void> {
    try {
      await this.hooks.stop(value);
    } catch (error) {
      this.hooks.onError(error, 'stop');
    }
  }
}
