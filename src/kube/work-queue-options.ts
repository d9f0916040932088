/** The contract of a {@link WorkQueue} (work-queue.ts): its handler, and how it is set up and started. */
import type { RateLimiter } from './backoff.js';
import type { AdmissionGate } from './loop-lag-gate.js';
import type { ReconcileMetricsProvider, WorkQueueMetricsProvider } from './metrics-hooks.js';

/** What a handler asks for after a successful run. */
export interface HandlerResult {
  /** Run the key again after this many ms (resets its failure backoff). */
  readonly requeueAfter?: number;
  /** Run the key again with rate limiting (counts as a retry). */
  readonly requeue?: boolean;
}

/** Context of one handler run. */
export interface HandlerContext {
  /** Aborted by `shutDown()` (not by `shutDownWithDrain()`). */
  readonly signal: AbortSignal;
  /** Rate-limited adds of this key since it last succeeded. */
  readonly retries: number;
}

/** Processes one key; throwing (or rejecting) retries it with backoff. */
// `void` so a plain `async (key) => { ... }` without a return statement is a handler.
// eslint-disable-next-line @typescript-eslint/no-invalid-void-type
export type Handler = (key: string, ctx: HandlerContext) => Promise<HandlerResult | undefined | void>;

/** Options of a {@link WorkQueue}. */
export interface WorkQueueOptions {
  /** Queue (and controller) name used as the metrics label. */
  readonly name: string;
  /** Delay policy of `addRateLimited` (default: client-go's default controller limiter). */
  readonly rateLimiter?: RateLimiter;
  readonly metrics?: WorkQueueMetricsProvider;
  readonly reconcileMetrics?: ReconcileMetricsProvider;
  /** How often unfinished-work gauges are refreshed (default 500 ms, as client-go). */
  readonly metricsUpdatePeriodMs?: number;
  /** Keys for which this is false are not queued (e.g. runtimes another replica works); default all. */
  readonly admit?: (key: string) => boolean;
}

/** Options of {@link WorkQueue.start}. */
export interface StartOptions {
  /** Maximum number of handlers running at once (default 1). */
  readonly concurrency?: number;
  /** Told about every handler failure (the key is retried regardless). */
  readonly onError?: (key: string, err: unknown) => void;
  /**
   * Passed by a worker between taking a key and running it, left after the run: bounds the runs
   * at once below `concurrency` (e.g. a LoopLagGate).
   */
  readonly gate?: AdmissionGate;
}
