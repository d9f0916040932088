/**
 * Metric hooks of the work queue and the controller loop: interfaces only, so the
 * queue stays free of prom-client and tests can observe it. `workqueue-metrics.ts`
 * and `reconcile-metrics.ts` implement them with controller-runtime's names.
 */

/** Per-queue metric sinks (client-go's `MetricsProvider`, already bound to the queue name). */
export interface WorkQueueMetrics {
  /** A key was added (not counted when de-duplicated). */
  add(): void;
  /** Current number of ready keys. */
  depth(n: number): void;
  /** Seconds a key waited between add and start of processing. */
  queueDuration(seconds: number): void;
  /** Seconds a handler ran. */
  workDuration(seconds: number): void;
  /** A rate-limited add (a retry). */
  retry(): void;
  /** Sum of seconds in-flight handlers have been running. */
  unfinishedWork(seconds: number): void;
  /** Seconds the longest in-flight handler has been running. */
  longestRunningProcessor(seconds: number): void;
}

/** Creates the metric sinks of a queue by name; see `workqueue-metrics.ts`. */
export interface WorkQueueMetricsProvider {
  forQueue(name: string): WorkQueueMetrics;
}

/** Outcome of one handler run, as controller-runtime labels `controller_runtime_reconcile_total`. */
export type ReconcileResultKind = 'success' | 'error' | 'requeue' | 'requeue_after';

/** Per-controller reconcile metric sinks; see `reconcile-metrics.ts`. */
export interface ReconcileMetrics {
  maxConcurrency(n: number): void;
  activeWorkers(delta: 1 | -1): void;
  observe(result: ReconcileResultKind, seconds: number): void;
}

/** Creates the reconcile metric sinks of a controller by name. */
export interface ReconcileMetricsProvider {
  forController(name: string): ReconcileMetrics;
}

/**
 * Wraps hooks so an exception in one is swallowed: metrics are best effort and must
 * never break a worker loop or leave a key marked as processing.
 */
export function guardHooks<H extends object>(hooks: H): H {
  return new Proxy(hooks, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        try {
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        } catch {
          return undefined;
        }
      };
    },
  });
}
