/**
 * A keyed work queue and its worker loop, as client-go's rate-limited workqueue plus
 * controller-runtime's controller loop. Guarantees:
 * - a key queued several times is processed once (de-duplication);
 * - a key is never processed by two workers at once: added while running, it is marked
 *   dirty and runs again after the current run;
 * - failures back off per key; `requeueAfter` schedules the next run; at most
 *   `concurrency` handlers run at a time;
 * - a run's follow-up (`requeueAfter`, once due) goes before keys queued otherwise: a runtime in
 *   the middle of its lifecycle (an install waiting for its Deployment) is not kept behind a
 *   fan-out's or an onboarding's whole backlog; a retry after a failure waits its turn.
 */
import { defaultControllerRateLimiter, systemClock, type RateLimiter } from './backoff.js';
import { DelayQueue } from './delay-queue.js';
import type { AdmissionGate } from './loop-lag-gate.js';
import { Fifo } from './fifo.js';
import {
  guardHooks,
  type ReconcileMetrics,
  type ReconcileResultKind,
  type WorkQueueMetrics,
} from './metrics-hooks.js';
import type { Handler, StartOptions, WorkQueueOptions } from './work-queue-options.js';

/** Misuse of a work queue (e.g. started twice). */
export class WorkQueueError extends Error {
  override readonly name = 'WorkQueueError';
}

const noopMetrics: WorkQueueMetrics = {
  add: () => undefined,
  depth: () => undefined,
  queueDuration: () => undefined,
  workDuration: () => undefined,
  retry: () => undefined,
  unfinishedWork: () => undefined,
  longestRunningProcessor: () => undefined,
};

/** A de-duplicating, per-key serialised, rate-limited work queue with a worker pool. */
export class WorkQueue {
  readonly name: string;
  private readonly limiter: RateLimiter;
  private readonly metrics: WorkQueueMetrics;
  private readonly reconcileMetrics: ReconcileMetrics | undefined;
  /** Keys ready to run, oldest first. */
  private readonly ready = new Fifo<string>();
  /** Follow-ups ready to run, oldest first: taken before {@link ready}. */
  private readonly followUps = new Fifo<string>();
  /** Keys whose pending delay is a follow-up a run asked for (not a retry nor an `addAfter`). */
  private readonly followUpDelays = new Set<string>();
  /** Queued keys that go to {@link followUps} once pushed (queued while they were running). */
  private readonly followUpKeys = new Set<string>();
  /** Keys that need processing: queued, or added again while processing. */
  private readonly dirty = new Set<string>();
  /** Keys being processed, with their start time. */
  private readonly processing = new Map<string, number>();
  private readonly addedAt = new Map<string, number>();
  private readonly delayed: DelayQueue<string>;
  private readonly wakeups: (() => void)[] = [];
  private readonly idleWaiters: (() => void)[] = [];
  private readonly abort = new AbortController();
  private shuttingDown = false;
  private started = false;
  private ticker: NodeJS.Timeout | undefined;

  constructor(private readonly opts: WorkQueueOptions) {
    this.name = opts.name;
    this.limiter = opts.rateLimiter ?? defaultControllerRateLimiter();
    this.metrics = opts.metrics ? guardHooks(opts.metrics.forQueue(opts.name)) : noopMetrics;
    const rm = opts.reconcileMetrics?.forController(opts.name);
    this.reconcileMetrics = rm ? guardHooks(rm) : undefined;
    // Pending delays are pending work: the timer keeps the process alive until shutdown clears it.
    this.delayed = new DelayQueue<string>((key) => {
      this.enqueue(key, this.followUpDelays.delete(key));
    });
  }

  /** Queue `key` for processing now; a no-op if it is already queued or after shutdown. */
  add(key: string): void {
    this.enqueue(key, false);
  }

  private enqueue(key: string, followUp: boolean): void {
    if (this.shuttingDown || this.opts.admit?.(key) === false) return;
    // An immediate add supersedes a pending delayed one: the run it causes decides what comes next.
    this.delayed.cancel(key);
    this.followUpDelays.delete(key);
    if (this.dirty.has(key)) return;
    this.metrics.add();
    this.dirty.add(key);
    if (followUp) this.followUpKeys.add(key);
    this.addedAt.set(key, systemClock.now());
    if (this.processing.has(key)) return; // re-queued by done()
    this.push(key);
  }

  /** Queue `key` after `ms`; keeps the earlier deadline if it already waits, no-op if already queued. */
  addAfter(key: string, ms: number): void {
    this.delay(key, ms, false);
  }

  private delay(key: string, ms: number, followUp: boolean): void {
    if (this.shuttingDown) return;
    if (!(ms > 0)) {
      this.enqueue(key, followUp);
      return;
    }
    if (this.dirty.has(key)) return;
    if (!this.delayed.schedule(key, ms)) return;
    if (followUp) this.followUpDelays.add(key);
    else this.followUpDelays.delete(key);
  }

  /** Queue `key` after the rate limiter's delay (per-key backoff, global bucket). */
  addRateLimited(key: string): void {
    if (this.shuttingDown) return;
    this.metrics.retry();
    this.addAfter(key, this.limiter.when(key));
  }

  /** Reset the backoff of `key` (after it succeeded). */
  forget(key: string): void {
    this.limiter.forget(key);
  }

  /** Rate-limited adds of `key` since it was last forgotten. */
  numRequeues(key: string): number {
    return this.limiter.retries(key);
  }

  /** Number of keys ready to be processed (not counting delayed or running ones). */
  len(): number {
    return this.ready.length + this.followUps.length;
  }

  /** Whether shutdown has begun. */
  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /**
   * Run `handler` for queued keys on up to `concurrency` workers until shutdown. The
   * promise resolves when every worker has exited; it rejects only on misuse (started
   * twice, bad concurrency), never because a handler failed.
   */
  async start(handler: Handler, opts: StartOptions = {}): Promise<void> {
    if (this.started) throw new WorkQueueError(`work queue ${this.name} already started`);
    const concurrency = opts.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) {
      throw new WorkQueueError(`concurrency must be a positive integer, got ${concurrency}`);
    }
    this.started = true;
    this.reconcileMetrics?.maxConcurrency(concurrency);
    this.startTicker();
    const workers: Promise<void>[] = [];
    for (let i = 0; i < concurrency; i++) workers.push(this.worker(handler, opts.onError, opts.gate));
    try {
      await Promise.all(workers);
    } finally {
      this.stopTicker();
    }
  }

  /**
   * Stop now: accept no new keys, drop queued and delayed ones, abort the signal of
   * running handlers. Running handlers still finish; await `start()` to see workers exit.
   */
  shutDown(): void {
    this.beginShutdown();
    this.abort.abort(new WorkQueueError(`work queue ${this.name} shut down`));
  }

  /**
   * Stop gracefully: accept no new keys, drop queued and delayed ones, and resolve once
   * every running handler has finished (their signals are not aborted). Call `shutDown()`
   * afterwards to abort handlers that take too long.
   */
  async shutDownWithDrain(): Promise<void> {
    this.beginShutdown();
    if (this.processing.size === 0) return;
    await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private beginShutdown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    this.delayed.clear();
    this.ready.clear();
    this.followUps.clear();
    this.followUpDelays.clear();
    this.followUpKeys.clear();
    this.dirty.clear();
    this.addedAt.clear();
    this.metrics.depth(0);
    for (const wake of this.wakeups.splice(0)) wake();
    if (!this.started) this.stopTicker();
  }

  private push(key: string): void {
    (this.followUpKeys.delete(key) ? this.followUps : this.ready).push(key);
    this.metrics.depth(this.len());
    this.wakeups.shift()?.();
  }

  private take(): string | undefined {
    const key = this.followUps.shift() ?? this.ready.shift();
    if (key !== undefined) this.metrics.depth(this.len());
    return key;
  }

  private async next(): Promise<string | undefined> {
    for (;;) {
      if (this.shuttingDown) return undefined;
      const key = this.take();
      if (key !== undefined) return key;
      await new Promise<void>((resolve) => this.wakeups.push(resolve));
    }
  }

  private async worker(
    handler: Handler,
    onError: StartOptions['onError'],
    gate: AdmissionGate | undefined,
  ): Promise<void> {
    for (;;) {
      // A place first, then a key: keys wait in the queue, where follow-ups go first, and not in
      // the hands of workers waiting at the gate.
      await gate?.acquire();
      try {
        const key = await this.next();
        if (key === undefined) return;
        await gate?.turn();
        if (this.shuttingDown) return;
        await this.process(key, handler, onError);
      } finally {
        gate?.release();
      }
    }
  }

  private async process(key: string, handler: Handler, onError: StartOptions['onError']): Promise<void> {
    const now = systemClock.now();
    this.dirty.delete(key);
    this.processing.set(key, now);
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (added !== undefined) this.metrics.queueDuration((now - added) / 1000);
    this.reconcileMetrics?.activeWorkers(1);
    let result: ReconcileResultKind;
    try {
      const res = await handler(key, { signal: this.abort.signal, retries: this.limiter.retries(key) });
      if (res?.requeueAfter !== undefined && res.requeueAfter > 0) {
        this.limiter.forget(key);
        this.delay(key, res.requeueAfter, true);
        result = 'requeue_after';
      } else if (res?.requeue === true) {
        this.addRateLimited(key);
        result = 'requeue';
      } else {
        this.limiter.forget(key);
        result = 'success';
      }
    } catch (err) {
      result = 'error';
      this.addRateLimited(key);
      try {
        onError?.(key, err);
      } catch {
        // A failing error reporter must not stop the worker.
      }
    }
    const seconds = (systemClock.now() - now) / 1000;
    this.reconcileMetrics?.observe(result, seconds);
    this.reconcileMetrics?.activeWorkers(-1);
    this.done(key, seconds);
  }

  private done(key: string, seconds: number): void {
    this.processing.delete(key);
    this.metrics.workDuration(seconds);
    // Added while running: now it may run again.
    if (this.dirty.has(key) && !this.shuttingDown) this.push(key);
    if (this.processing.size === 0) for (const idle of this.idleWaiters.splice(0)) idle();
  }

  private startTicker(): void {
    if (this.opts.metrics === undefined || this.ticker !== undefined || this.shuttingDown) return;
    this.ticker = setInterval(() => {
      this.updateUnfinishedWork();
    }, this.opts.metricsUpdatePeriodMs ?? 500);
    // Only a gauge refresh: never a reason to keep the process alive.
    this.ticker.unref();
  }

  private stopTicker(): void {
    if (this.ticker !== undefined) clearInterval(this.ticker);
    this.ticker = undefined;
    this.updateUnfinishedWork();
  }

  private updateUnfinishedWork(): void {
    const now = systemClock.now();
    let total = 0;
    let longest = 0;
    for (const started of this.processing.values()) {
      const s = (now - started) / 1000;
      total += s;
      longest = Math.max(longest, s);
    }
    this.metrics.unfinishedWork(total);
    this.metrics.longestRunningProcessor(longest);
  }
}
