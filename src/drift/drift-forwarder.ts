import type { Agent } from 'node:https';
import { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { Backoff, type BackoffOptions } from '../kube/backoff.js';
import { DropLog } from './drop-log.js';
import {
  createForwarderMetrics,
  type DropReason,
  type ForwarderMetrics,
  type SendResult,
} from './forwarder-metrics.js';
import { ReloadingTlsAgent, type ClientTlsFiles } from './reloading-tls-agent.js';
import { PendingEvents } from './pending-events.js';
import { postJson, type PostHandle } from './post-json.js';
import { parseRetryAfter } from './retry-after.js';
import { WATCH_EVENT_PATH, encodeWatchEvent, type WatchEvent } from './watch-event.js';
import { listenerEndpoint } from './listener-endpoint.js';

/** Settings of the drift forwarder. */
export interface DriftForwarderOptions {
  /** The KCP listener, `https://host:port`; {@link WATCH_EVENT_PATH} is appended. */
  readonly url: string;
  /** Client certificate and key, and the CA of the listener; re-read when the files change. */
  readonly tls: ClientTlsFiles;
  readonly logger: Logger;
  /** Where the `rtb_drift_forwarder_*` metrics go (default: a private registry). */
  readonly registry?: Registry;
  /** Events waiting besides the one in flight; more are dropped (default 1000). */
  readonly maxQueue?: number;
  /** Retry delays (default 200 ms doubling to 30 s, 20 % jitter). */
  readonly backoff?: Partial<Pick<BackoffOptions, 'baseMs' | 'maxMs' | 'factor' | 'jitter' | 'random'>>;
  /** Attempts per event before it is dropped (default 10, about 80 s with the default backoff). */
  readonly maxAttempts?: number;
  /** Limit of one POST, connecting included (default 5 s). */
  readonly requestTimeoutMs?: number;
  /** Re-read the TLS files at most this often (default 1 s; 0: before every request). */
  readonly tlsCheckIntervalMs?: number;
}

/** The forwarder was misconfigured, or a flush did not finish in time. */
export class DriftForwarderError extends Error {
  override readonly name = 'DriftForwarderError';
}

interface Pending {
  readonly event: WatchEvent;
  /** The canonical JSON: body of the POST and de-duplication key. */
  readonly body: string;
  readonly enqueuedAt: number;
  attempts: number;
}

type Outcome =
  | { readonly result: 'success' }
  | { readonly result: Exclude<SendResult, 'success' | 'rejected'>; readonly retryAfterMs?: number }
  | { readonly result: 'rejected'; readonly status: number };

// A Retry-After beyond this is treated as this: the KCP may be confused, drift still matters.
const RETRY_AFTER_CAP_MS = 5 * 60_000;

/**
 * The runtime end of the drift channel. `send` only enqueues (the admission answer never waits
 * for the KCP); one loop POSTs the events in order over a keep-alive mutual-TLS connection,
 * retrying network errors, 5xx, 408 and 429 (honouring Retry-After) with jittered exponential
 * backoff, and drops an event with a log line and a metric after `maxAttempts`, on any other
 * answer, or when the queue is full. Failures are channel-wide (the KCP is down or refuses us),
 * so the backoff is shared and the head event waits; the others wait behind it.
 */
export class DriftForwarder {
  private readonly target: URL;
  private readonly metrics: ForwarderMetrics;
  private readonly tls: ReloadingTlsAgent;
  private readonly backoff: Backoff;
  private readonly jitter: number;
  private readonly random: () => number;
  private readonly queue = new PendingEvents<Pending>();
  private inFlight: Pending | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;
  private activePost: PostHandle | undefined;
  private interruptSleep: (() => void) | undefined;
  private idleWaiters: (() => void)[] = [];
  private readonly dropLog: DropLog;

  constructor(private readonly opts: DriftForwarderOptions) {
    const target = listenerEndpoint(opts.url, WATCH_EVENT_PATH);
    if (!(target instanceof URL)) throw new DriftForwarderError(target.message, { cause: target.cause });
    if (!((opts.maxQueue ?? 1) >= 1) || !((opts.maxAttempts ?? 1) >= 1)) {
      throw new DriftForwarderError('maxQueue and maxAttempts must be at least 1');
    }
    this.target = target;
    this.metrics = createForwarderMetrics(opts.registry ?? new Registry());
    this.dropLog = new DropLog(opts.logger);
    this.jitter = opts.backoff?.jitter ?? 0.2;
    this.random = opts.backoff?.random ?? Math.random;
    this.backoff = new Backoff({
      baseMs: opts.backoff?.baseMs ?? 200,
      maxMs: opts.backoff?.maxMs ?? 30_000,
      factor: opts.backoff?.factor ?? 2,
      jitter: this.jitter,
      random: this.random,
    });
    this.tls = new ReloadingTlsAgent({
      files: opts.tls,
      checkIntervalMs: opts.tlsCheckIntervalMs ?? 1000,
      idleSocketMs: 30_000,
      logger: opts.logger,
      onReload: (result) => {
        this.metrics.tlsReloads.inc({ result });
      },
    });
  }

  /** Queues an event for the KCP and returns at once; never throws, never waits. */
  send(event: WatchEvent): void {
    if (this.stopped) {
      this.drop(undefined, 'stopped');
      return;
    }
    const body = encodeWatchEvent(event);
    if (this.queue.has(body)) {
      // The one waiting will tell the KCP the same thing, and no earlier than this one would.
      this.metrics.deduplicated.inc();
      return;
    }
    if (this.queue.length >= (this.opts.maxQueue ?? 1000)) {
      this.drop({ event, body, enqueuedAt: performance.now(), attempts: 0 }, 'queue_full');
      return;
    }
    this.queue.push({ event, body, enqueuedAt: performance.now(), attempts: 0 });
    this.updateDepth();
    this.loop ??= this.run();
  }

  /** Resolves once every queued event was delivered or dropped; rejects after `timeoutMs`. */
  async flush(timeoutMs: number): Promise<void> {
    if (this.loop === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        new Promise<void>((resolve) => this.idleWaiters.push(resolve)),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            reject(
              new DriftForwarderError(
                `flush: ${this.depth()} drift events still pending after ${timeoutMs} ms`,
              ),
            );
          }, timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops sending: drops (and counts) what is still queued, aborts the request in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.interruptSleep?.();
    this.activePost?.abort(new Error('the drift forwarder is stopping'));
    await this.loop;
    const left = this.queue.drain();
    for (const p of left) this.drop(p, 'stopped', false);
    if (left.length > 0)
      this.opts.logger.warn({ dropped: left.length }, 'drift forwarder stopped with events pending');
    this.dropLog.flush();
    this.updateDepth();
    this.tls.destroy();
    this.wakeIdleWaiters();
  }

  private async run(): Promise<void> {
    try {
      while (!this.stopped) {
        const next = this.queue.shift();
        if (next === undefined) break;
        this.inFlight = next;
        const outcome = await this.attempt(next);
        this.inFlight = undefined;
        if (outcome.result === 'success') {
          this.backoff.reset();
          this.metrics.delivery.observe((performance.now() - next.enqueuedAt) / 1000);
        } else if (outcome.result === 'rejected') {
          this.drop(next, 'rejected', true, { status: outcome.status });
        } else if (this.hasStopped()) {
          // stop() aborted the request: counted here, not logged one by one.
          this.drop(next, 'stopped', false);
        } else if (next.attempts >= (this.opts.maxAttempts ?? 10)) {
          this.drop(next, 'max_attempts', true, { lastResult: outcome.result });
        } else {
          this.retryLater(next);
          await this.sleep(this.retryDelay(outcome.retryAfterMs));
        }
        this.updateDepth();
      }
    } finally {
      this.inFlight = undefined;
      this.loop = undefined;
      this.wakeIdleWaiters();
    }
  }

  private async attempt(p: Pending): Promise<Outcome> {
    p.attempts++;
    let agent: Agent;
    try {
      agent = await this.tls.current();
    } catch (error) {
      this.opts.logger.warn({ err: error }, 'no usable client certificate for the drift channel');
      return this.count({ result: 'no_tls_material' });
    }
    // stop() may have come while the files were read; it could not abort a request not yet made.
    if (this.hasStopped()) return { result: 'network_error' };
    try {
      const post = postJson(this.target, agent, p.body, this.opts.requestTimeoutMs ?? 5000);
      this.activePost = post;
      const { status, retryAfter } = await post.answer.finally(() => {
        this.activePost = undefined;
      });
      if (status >= 200 && status < 300) return this.count({ result: 'success' });
      const retryAfterMs = parseRetryAfter(retryAfter, RETRY_AFTER_CAP_MS);
      if (status === 429) return this.count({ result: 'throttled', retryAfterMs });
      if (status >= 500 || status === 408) return this.count({ result: 'server_error', retryAfterMs });
      return this.count({ result: 'rejected', status });
    } catch (error) {
      // A refused handshake may mean our certificate was renewed (or the KCP's CA rotated):
      // read the files again before the next attempt.
      this.tls.invalidate();
      if (!this.stopped) this.opts.logger.debug({ err: error }, 'drift event POST failed');
      return this.count({ result: 'network_error' });
    }
  }

  private retryLater(p: Pending): void {
    this.metrics.retries.inc();
    if (this.queue.has(p.body)) {
      // The same event arrived while this one was in flight: keep the newer, with fresh attempts.
      this.metrics.deduplicated.inc();
      return;
    }
    this.queue.pushFront(p);
  }

  private retryDelay(retryAfterMs: number | undefined): number {
    if (retryAfterMs === undefined) return this.backoff.next();
    // The server said when; a little jitter keeps many runtimes from returning in one instant.
    return retryAfterMs * (1 + this.jitter * this.random());
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.interruptSleep = undefined;
        resolve();
      };
      // Unreferenced: a pending retry alone should not keep a finished process alive.
      const timer = setTimeout(done, ms);
      timer.unref();
      this.interruptSleep = done;
    });
  }

  private count(outcome: Outcome): Outcome {
    this.metrics.sends.inc({ result: outcome.result });
    return outcome;
  }

  private drop(
    p: Pending | undefined,
    reason: DropReason,
    log = true,
    extra: Record<string, unknown> = {},
  ): void {
    this.metrics.dropped.inc({ reason });
    if (log && p !== undefined) this.dropLog.dropped(p.event, reason, { attempts: p.attempts, ...extra });
  }

  // A method, not the field: TypeScript would keep the loop's narrowing across the await.
  private hasStopped(): boolean {
    return this.stopped;
  }

  private depth(): number {
    return this.queue.length + (this.inFlight === undefined ? 0 : 1);
  }

  private updateDepth(): void {
    this.metrics.queueDepth.set(this.depth());
  }

  private wakeIdleWaiters(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}
