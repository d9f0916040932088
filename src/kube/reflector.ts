/**
 * A list+watch reflector, as client-go's Reflector feeding an informer's Store: it
 * lists a resource (paged), replaces the store atomically, then watches from the
 * list's resourceVersion, and keeps doing so through every failure mode a long-lived
 * watch meets: server-side timeouts, expired resourceVersions (410 → relist, with the
 * difference delivered so no deletion is lost), silent connections (watchdog), and
 * errors (jittered exponential backoff). `relist()` lists again on demand, for callers that
 * must prove the cache current before acting on it.
 */
import { Backoff, systemClock } from './backoff.js';
import { KubeApiError, isResourceVersionUnusable, type KubeStatus } from './kube-errors.js';
import { Latch } from './latch.js';
import { safeLogger } from './safe-logger.js';
import type { WatchEventType } from './lister-watcher.js';
import { MAX_PAGE_ITEMS } from './list-budget.js';
import { listAll } from './pager.js';
import type { ReflectorLogger, ReflectorOptions, ResourceEventHandlers } from './reflector-options.js';
import { RelistRequests } from './relist-requests.js';
import { Store, type KubeObject, type ReadonlyStore, type StoreChange } from './store.js';

// The options and handler types live in reflector-options.ts.

/** `waitForSync` after `stop()`, or before the first list completed when stopped. */
export class ReflectorStoppedError extends Error {
  override readonly name = 'ReflectorStoppedError';
}

type WatchOutcome = 'ended' | 'expired' | 'error' | 'watchdog' | 'stopped' | 'relist';

/** Keeps a {@link Store} in sync with one resource collection and reports its changes. */
export class Reflector<T extends KubeObject> {
  private readonly cache = new Store<T>();
  private readonly handlers: ResourceEventHandlers<T>[] = [];
  private readonly backoff: Backoff;
  private readonly log: ReflectorLogger;
  private readonly random: () => number;
  private rv = '';
  private readonly synced = new Latch();
  /** Aborted by `stop()`: ends sleeps and, through `current`, the request in flight. */
  private readonly lifetime = new AbortController();
  private loop: Promise<void> | undefined;
  /** Aborts the list or watch in flight. */
  private current: AbortController | undefined;
  private readonly relists = new RelistRequests();

  constructor(private readonly opts: ReflectorOptions<T>) {
    this.random = opts.random ?? Math.random;
    this.backoff = new Backoff(
      opts.backoff ?? { baseMs: 800, maxMs: 30_000, factor: 2, jitter: 1, random: this.random },
    );
    this.log = safeLogger(opts.logger);
    if (opts.handlers) this.handlers.push(opts.handlers);
  }

  /** The cache, read-only. */
  get store(): ReadonlyStore<T> {
    return this.cache;
  }

  /** The resourceVersion the next watch starts from ('' before the first list). */
  lastSyncResourceVersion(): string {
    return this.rv;
  }

  /** Whether the first list has been stored. */
  hasSynced(): boolean {
    return this.synced.isOpen();
  }

  /**
   * Add handlers; objects already cached are replayed to them as adds (as client-go's
   * `AddEventHandler`), so a late subscriber misses nothing.
   */
  addEventHandler(handlers: ResourceEventHandlers<T>): void {
    this.handlers.push(handlers);
    for (const obj of this.cache.list()) this.call(handlers, { type: 'add', obj });
  }

  /** Start listing and watching in the background; a second call does nothing. */
  start(): void {
    if (this.loop !== undefined || this.stopped()) return;
    this.loop = this.run();
  }

  /** Resolves once the first list is stored; rejects if stopped first or `signal` aborts. */
  waitForSync(signal?: AbortSignal): Promise<void> {
    return this.synced.wait(signal);
  }

  /**
   * Lists again from the API server; resolves once a list that started after this call is
   * stored and its changes were dispatched, so the cache is at least as new as the server's
   * state at the time of the call. The watch in flight ends and a backoff sleep is cut short.
   * Rejects if stopped or `signal` aborts.
   */
  relist(signal?: AbortSignal): Promise<void> {
    return this.relists.request(signal);
  }

  /** Stop: abort the request in flight, end the loop, and resolve when it has ended. */
  async stop(): Promise<void> {
    const reason = new ReflectorStoppedError(`reflector ${this.opts.name} stopped`);
    this.lifetime.abort(reason);
    this.current?.abort(reason);
    this.synced.fail(reason);
    this.relists.failAll(reason);
    await this.loop;
  }

  // A method, not a field read, so the compiler does not assume it is unchanged across awaits.
  private stopped(): boolean {
    return this.lifetime.signal.aborted;
  }

  private async run(): Promise<void> {
    let needList = true;
    while (!this.stopped()) {
      if (needList || this.relists.pending()) {
        try {
          await this.listAndReplace();
          needList = false;
          if (this.stopped()) break;
        } catch (err) {
          if (this.stopped()) break;
          const delay = this.backoff.next();
          this.log.warn(
            { reflector: this.opts.name, err, delayMs: Math.round(delay) },
            'list failed; backing off',
          );
          await this.relists.sleep(delay, this.lifetime.signal);
          continue;
        }
      }
      // A relist requested during the last list: that list may predate the request. No await
      // between this check and the watch's start, so no request can slip in unseen.
      if (this.relists.pending()) continue;
      const started = systemClock.now();
      const { outcome, events, err } = await this.watchOnce();
      if (outcome === 'stopped' || this.stopped()) break;
      if (outcome === 'relist') continue;
      const healthy = events > 0 || systemClock.now() - started >= (this.opts.minHealthyWatchMs ?? 1_000);
      if (healthy) this.backoff.reset();
      if (outcome === 'expired') needList = true;
      // Re-watch (or relist) at once after a healthy watch or a watchdog restart (the watch
      // was silent for a long time already); back off after errors and after watches that
      // ended fast without delivering anything, so a misbehaving server is not hammered.
      const delayMs = outcome === 'error' || (!healthy && outcome !== 'watchdog') ? this.backoff.next() : 0;
      const ctx = { reflector: this.opts.name, rv: this.rv, err, delayMs: Math.round(delayMs) };
      if (outcome === 'watchdog') this.log.warn(ctx, 'watch silent for too long; restarting it');
      else if (outcome === 'error') this.log.warn(ctx, 'watch failed; backing off');
      else if (outcome === 'expired') this.log.debug(ctx, 'resourceVersion expired; relisting');
      else this.log.debug(ctx, 'watch ended; watching again');
      if (delayMs > 0) await this.relists.sleep(delayMs, this.lifetime.signal);
    }
  }

  private async listAndReplace(): Promise<void> {
    const ac = new AbortController();
    this.current = ac;
    const seq = this.relists.listStarted();
    try {
      const { items, resourceVersion } = await listAll(
        this.opts.listerWatcher,
        {
          pageSize: this.opts.pageSize ?? MAX_PAGE_ITEMS,
          pageBytes: this.opts.pageBytes,
          itemBytes: this.opts.itemBytes,
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
          transform: this.opts.transform,
          onRestart: (err) => {
            this.log.debug({ reflector: this.opts.name, err }, 'continue token expired; listing again');
          },
          onShrink: (limit) => {
            this.log.debug(
              { reflector: this.opts.name, limit },
              'a list page broke its byte budget; asking in half',
            );
          },
        },
        ac.signal,
      );
      if (this.stopped()) return;
      // Transformed already, page by page (./pager.ts).
      const changes = this.cache.replace(items);
      this.rv = resourceVersion;
      this.synced.open();
      for (const change of changes) this.dispatch(change);
      this.relists.listStored(seq);
    } finally {
      if (this.current === ac) this.current = undefined;
    }
  }

  private async watchOnce(): Promise<{ outcome: WatchOutcome; events: number; err?: unknown }> {
    if (this.stopped()) return { outcome: 'stopped', events: 0 };
    const ac = new AbortController();
    this.current = ac;
    this.relists.watchStarted(ac);
    // Mutated by callbacks; an object so the compiler does not narrow it to its initial values.
    const st: { events: number; active: boolean; silent: boolean; errorStatus: KubeStatus | undefined } = {
      events: 0,
      active: true,
      silent: false,
      errorStatus: undefined,
    };
    const inactivityMs = this.opts.inactivityTimeoutMs ?? 180_000;
    // The watch's socket keeps the process alive; the watchdog never should.
    const watchdog =
      inactivityMs > 0
        ? setTimeout(() => {
            st.silent = true;
            st.active = false;
            ac.abort(new Error('watch inactivity timeout'));
          }, inactivityMs).unref()
        : undefined;
    const onEvent = (type: WatchEventType, obj: T | KubeStatus): void => {
      if (!st.active) return;
      if (type === 'ERROR') {
        st.errorStatus = obj as KubeStatus;
        st.active = false;
        ac.abort(new Error('watch ERROR event'));
        return;
      }
      st.events++;
      watchdog?.refresh();
      this.apply(type, obj as T);
    };
    const { min, max } = this.opts.watchTimeoutSeconds ?? { min: 300, max: 600 };
    const timeoutSeconds = Math.floor(min + this.random() * Math.max(0, max - min + 1));
    let thrown: unknown;
    let threw = false;
    try {
      await this.opts.listerWatcher.watch(
        {
          resourceVersion: this.rv,
          timeoutSeconds: Math.min(max, Math.max(1, timeoutSeconds)),
          allowWatchBookmarks: true,
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
        },
        onEvent,
        ac.signal,
      );
    } catch (err) {
      threw = true;
      thrown = err;
    } finally {
      st.active = false;
      clearTimeout(watchdog);
      if (this.current === ac) this.current = undefined;
      this.relists.watchEnded(ac);
    }
    const { events, errorStatus } = st;
    if (this.stopped()) return { outcome: 'stopped', events };
    if (this.relists.endedBy(ac.signal)) return { outcome: 'relist', events };
    if (errorStatus !== undefined) {
      const err = KubeApiError.fromStatus(errorStatus);
      return { outcome: isResourceVersionUnusable(err) ? 'expired' : 'error', events, err };
    }
    if (st.silent) return { outcome: 'watchdog', events };
    if (threw)
      return { outcome: isResourceVersionUnusable(thrown) ? 'expired' : 'error', events, err: thrown };
    return { outcome: 'ended', events };
  }

  private apply(type: Exclude<WatchEventType, 'ERROR'>, watched: T): void {
    const rv = watched.metadata?.resourceVersion;
    try {
      if (type === 'BOOKMARK') return; // only moves the resourceVersion, below
      const obj = this.opts.transform ? this.opts.transform(watched) : watched;
      const change = type === 'DELETED' ? this.cache.remove(obj) : this.cache.upsert(obj);
      if (change) this.dispatch(change);
    } catch (err) {
      this.log.warn({ reflector: this.opts.name, err, type }, 'ignoring malformed watch event');
    } finally {
      if (rv !== undefined && rv !== '') this.rv = rv;
    }
  }

  private dispatch(change: StoreChange<T>): void {
    for (const h of this.handlers) this.call(h, change);
  }

  private call(h: ResourceEventHandlers<T>, change: StoreChange<T>): void {
    // A throwing handler must neither stop the reflector nor starve the other handlers.
    try {
      if (change.type === 'add') h.onAdd?.(change.obj);
      else if (change.type === 'update') h.onUpdate?.(change.old, change.obj);
      else h.onDelete?.(change.obj, change.finalStateUnknown);
    } catch (err) {
      this.log.warn({ reflector: this.opts.name, err, change: change.type }, 'event handler threw');
    }
  }
}
