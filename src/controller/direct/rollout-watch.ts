/**
 * A runtime whose webhook Deployment is rolling out is woken when the rollout moves, instead of
 * being polled: a pass that finds the rollout under way follows the Deployment with a watch from
 * the resourceVersion it read, and the first event that changes what the pass saw (available at
 * last, a replica more, deleted, a new restarter's report), or the watch's end, enqueues the runtime's next pass, which
 * reads again and follows again while it still waits.
 *
 * A runtime is an adversary (DESIGN §14): each watch is bounded in time (the server ends it after
 * {@link WATCH_SECONDS}, we after {@link WATCH_DEADLINE_MS}), in events ({@link MAX_EVENTS}) and in
 * bytes per event (the runtime client's cap on an answer), and wakes only its own runtime. At most
 * `max` watches are open at once: beyond, and for a while after a runtime's watch failed, the
 * pass polls as before.
 */
import type { Logger } from 'pino';
import type { ListerWatcher, WatchEventType } from '../../kube/lister-watcher.js';
import type { Lifecycle } from '../../process/part-group.js';
import { readTrustStatus, type TrustRestartStatus } from '../../api/trust-stamp.js';
import { deploymentRollout, type RolloutDeployment } from './deployment-rollout.js';

/** The server ends a watch after this long; the pass then reads again (and follows again). */
export const WATCH_SECONDS = 60;
/** We end a watch the server did not end this long after it began. */
export const WATCH_DEADLINE_MS = (WATCH_SECONDS + 15) * 1000;
/** Events one watch takes at most: a rollout moves a few times, a runtime streaming more is cut off. */
export const MAX_EVENTS = 100;
/** After a watch failed, its runtime is polled this long before it is watched again. */
export const FAILED_WATCH_BACKOFF_MS = 5 * 60_000;
/** Watches open at once, by default: a fleet's onboarding beyond it is polled. */
export const DEFAULT_MAX_ROLLOUT_WATCHES = 50;

/** What a pass saw of the rollout it follows. */
export interface SeenRollout {
  readonly resourceVersion: string;
  readonly message: string;
  /** The trust-bundle restarter's report as read ({@link trustSeen}): a new one is looked at too. */
  readonly trust: string;
}

/** The restarter's report as a pass reads it off the Deployment, comparable (pure). */
export const trustSeen = (report: TrustRestartStatus | undefined): string => JSON.stringify(report ?? null);

/** Settings of {@link RolloutWatches}. */
export interface RolloutWatchesOptions {
  /** Enqueues a pass of the runtime of `key`. */
  readonly wake: (key: string) => void;
  readonly logger: Logger;
  /** Watches open at once (default {@link DEFAULT_MAX_ROLLOUT_WATCHES}). */
  readonly max?: number;
  readonly now?: () => number;
}

/** How one watch ended. */
type Ending = 'moved' | 'ended' | 'failed' | 'dropped';

/** The open watches, one per runtime key at most. */
export class RolloutWatches implements Lifecycle {
  private readonly open = new Map<string, AbortController>();
  /** When (epoch ms) a runtime's last watch failed. */
  private readonly failedAt = new Map<string, number>();
  private stopped = false;
  private readonly max: number;
  private readonly now: () => number;

  constructor(private readonly o: RolloutWatchesOptions) {
    this.max = o.max ?? DEFAULT_MAX_ROLLOUT_WATCHES;
    this.now = o.now ?? Date.now;
  }

  /**
   * Follows the rollout of the Deployment `watcher` lists (one, by name) for the runtime of `key`
   * from what its pass saw; true when a watch follows it (one already open counts), false when the
   * pass must poll (watches full, a recent failure, stopped).
   */
  follow(key: string, watcher: ListerWatcher<RolloutDeployment>, name: string, seen: SeenRollout): boolean {
    if (this.stopped) return false;
    if (this.open.has(key)) return true;
    const failed = this.failedAt.get(key);
    if (failed !== undefined) {
      if (this.now() - failed < FAILED_WATCH_BACKOFF_MS) return false;
      this.failedAt.delete(key);
    }
    if (this.open.size >= this.max) return false;
    const abort = new AbortController();
    this.open.set(key, abort);
    void this.run(key, watcher, name, seen, abort).then((ending) => {
      if (this.open.get(key) === abort) this.open.delete(key);
      if (ending === 'failed') this.failedAt.set(key, this.now());
      // Dropped (forgotten, handed over, stopping): no pass of ours is due.
      if (ending !== 'dropped') this.o.wake(key);
    });
    return true;
  }

  /** Ends the watch of `key`, if any, and forgets its failure: its CR is gone or another replica's. */
  forget(key: string): void {
    this.open.get(key)?.abort();
    this.open.delete(key);
    this.failedAt.delete(key);
  }

  /** Watches open now. */
  get size(): number {
    return this.open.size;
  }

  start(): void {
    this.stopped = false;
  }

  /** Ends every watch; none opens until started again. */
  stop(): void {
    this.stopped = true;
    for (const abort of this.open.values()) abort.abort();
    this.open.clear();
    this.failedAt.clear();
  }

  private async run(
    key: string,
    watcher: ListerWatcher<RolloutDeployment>,
    name: string,
    seen: SeenRollout,
    abort: AbortController,
  ): Promise<Ending> {
    const deadline = AbortSignal.timeout(WATCH_DEADLINE_MS);
    const signal = AbortSignal.any([abort.signal, deadline]);
    let events = 0;
    let ending: Ending | undefined;
    const end = (e: Ending): void => {
      ending ??= e;
      abort.abort();
    };
    const onEvent = (type: WatchEventType, object: unknown): void => {
      if (ending !== undefined) return;
      if (++events > MAX_EVENTS) end('failed');
      else if (type === 'ERROR') end('failed');
      else if (type === 'DELETED') end('moved');
      else if (type === 'ADDED' || type === 'MODIFIED') {
        const d = object as RolloutDeployment;
        const trust = trustSeen(readTrustStatus(d.metadata?.annotations));
        if (deploymentRollout(d).message !== seen.message || trust !== seen.trust) end('moved');
      }
    };
    try {
      await watcher.watch(
        {
          resourceVersion: seen.resourceVersion,
          timeoutSeconds: WATCH_SECONDS,
          allowWatchBookmarks: true,
          fieldSelector: `metadata.name=${name}`,
        },
        onEvent,
        signal,
      );
    } catch (error) {
      if (ending === undefined && !signal.aborted) {
        this.o.logger.debug({ err: error, runtimeBootstrapper: key }, 'the rollout watch failed; polling');
        return 'failed';
      }
    }
    if (ending !== undefined) return ending;
    // Ended by forget() or stop(); by our deadline, it ended as the server should have ended it.
    return abort.signal.aborted ? 'dropped' : 'ended';
  }
}
