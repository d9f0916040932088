/**
 * Work queue metrics on prom-client with the names, label and buckets client-go's
 * component-base and controller-runtime use (`workqueue_*{name}`), so existing
 * dashboards and alerts for Kubernetes controllers work unchanged.
 */
import type { Registry } from 'prom-client';
import type { WorkQueueMetrics, WorkQueueMetricsProvider } from './metrics-hooks.js';
import { counterOn, gaugeOn, histogramOn } from '../telemetry/prom-metrics.js';

/**
 * Buckets of the duration histograms: 10 ns to 1000 s by powers of ten, as
 * `prometheus.ExponentialBuckets(10e-9, 10, 12)` in controller-runtime (written out
 * so the `le` labels are exact decimals rather than accumulated float products).
 */
export const WORKQUEUE_DURATION_BUCKETS: readonly number[] = [
  1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1, 10, 100, 1000,
];

/** Registers the `workqueue_*` families on a registry and binds them per queue name. */
export class PrometheusWorkQueueMetrics implements WorkQueueMetricsProvider {
  private readonly depth;
  private readonly adds;
  private readonly latency;
  private readonly workDuration;
  private readonly unfinished;
  private readonly longestRunning;
  private readonly retries;

  constructor(registry: Registry) {
    const labelNames = ['name'] as const;
    this.depth = gaugeOn(registry, {
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames,
    });
    this.adds = counterOn(registry, {
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames,
    });
    this.latency = histogramOn(registry, {
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames,
      buckets: WORKQUEUE_DURATION_BUCKETS,
    });
    this.workDuration = histogramOn(registry, {
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes.',
      labelNames,
      buckets: WORKQUEUE_DURATION_BUCKETS,
    });
    this.unfinished = gaugeOn(registry, {
      name: 'workqueue_unfinished_work_seconds',
      help:
        "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. " +
        'Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.',
      labelNames,
    });
    this.longestRunning = gaugeOn(registry, {
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames,
    });
    this.retries = counterOn(registry, {
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames,
    });
  }

  forQueue(name: string): WorkQueueMetrics {
    const labels = { name };
    const depth = this.depth.labels(labels);
    const adds = this.adds.labels(labels);
    const latency = this.latency.labels(labels);
    const work = this.workDuration.labels(labels);
    const unfinished = this.unfinished.labels(labels);
    const longest = this.longestRunning.labels(labels);
    const retries = this.retries.labels(labels);
    // Touch the counters so a quiet queue exports 0 rather than nothing.
    adds.inc(0);
    retries.inc(0);
    depth.set(0);
    return {
      add: () => {
        adds.inc();
      },
      depth: (n) => {
        depth.set(n);
      },
      queueDuration: (s) => {
        latency.observe(s);
      },
      workDuration: (s) => {
        work.observe(s);
      },
      retry: () => {
        retries.inc();
      },
      unfinishedWork: (s) => {
        unfinished.set(s);
      },
      longestRunningProcessor: (s) => {
        longest.set(s);
      },
    };
  }
}
