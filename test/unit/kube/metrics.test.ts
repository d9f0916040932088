import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Counter, Registry } from 'prom-client';
import { ItemExponentialBackoff } from '../../../src/kube/backoff.js';
import { MetricsRegistrationError } from '../../../src/telemetry/prom-metrics.js';
import { PrometheusReconcileMetrics } from '../../../src/kube/reconcile-metrics.js';
import { WorkQueue } from '../../../src/kube/work-queue.js';
import {
  PrometheusWorkQueueMetrics,
  WORKQUEUE_DURATION_BUCKETS,
} from '../../../src/kube/workqueue-metrics.js';

async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
): Promise<number> {
  const all = await registry.getMetricsAsJSON();
  const metric = all.find((m) => m.name === name);
  assert.ok(metric, `metric ${name} exists`);
  const value = metric.values.find((v) =>
    Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want),
  );
  assert.ok(value, `${name} has a series for ${JSON.stringify(labels)}`);
  return value.value;
}

void describe('prometheus metrics', () => {
  void test('a queue run exports controller-runtime named workqueue and reconcile series', async () => {
    const registry = new Registry();
    const q = new WorkQueue({
      name: 'runtimes',
      rateLimiter: new ItemExponentialBackoff({ baseMs: 1, maxMs: 5 }),
      metrics: new PrometheusWorkQueueMetrics(registry),
      reconcileMetrics: new PrometheusReconcileMetrics(registry),
      metricsUpdatePeriodMs: 5,
    });
    let runs = 0;
    let finished!: () => void;
    const allDone = new Promise<void>((r) => (finished = r));
    const running = q.start(
      async () => {
        await Promise.resolve();
        runs++;
        if (runs === 3) finished();
        if (runs === 1) throw new Error('first run fails');
      },
      { concurrency: 2 },
    );
    q.add('a');
    q.add('b');
    await allDone;
    q.shutDown();
    await running;

    const byName = { name: 'runtimes' };
    const ctl = { controller: 'runtimes' };
    const expected: [metric: string, labels: Record<string, string>, value: number][] = [
      ['workqueue_adds_total', byName, 3],
      ['workqueue_retries_total', byName, 1],
      ['workqueue_depth', byName, 0],
      ['workqueue_work_duration_seconds', { ...byName, le: '+Inf' }, 3],
      ['workqueue_queue_duration_seconds', { ...byName, le: '+Inf' }, 3],
      ['workqueue_unfinished_work_seconds', byName, 0],
      ['workqueue_longest_running_processor_seconds', byName, 0],
      ['controller_runtime_reconcile_total', { ...ctl, result: 'success' }, 2],
      ['controller_runtime_reconcile_total', { ...ctl, result: 'error' }, 1],
      ['controller_runtime_reconcile_total', { ...ctl, result: 'requeue' }, 0],
      ['controller_runtime_reconcile_errors_total', ctl, 1],
      ['controller_runtime_max_concurrent_reconciles', ctl, 2],
      ['controller_runtime_active_workers', ctl, 0],
      ['controller_runtime_reconcile_time_seconds', { ...ctl, le: '+Inf' }, 3],
    ];
    for (const [metric, labels, value] of expected)
      assert.equal(await metricValue(registry, metric, labels), value, `${metric} ${JSON.stringify(labels)}`);

    const text = await registry.metrics();
    assert.match(text, /workqueue_work_duration_seconds_bucket\{le="1e-8",name="runtimes"\}/);
  });

  void test('buckets are powers of ten from 10 ns to 1000 s', () => {
    assert.equal(WORKQUEUE_DURATION_BUCKETS.length, 12);
    WORKQUEUE_DURATION_BUCKETS.forEach((b, i) => {
      assert.ok(Math.abs(Math.log10(b) - (i - 8)) < 1e-9);
    });
  });

  void test('providers are idempotent per registry and detect type clashes', async () => {
    const registry = new Registry();
    const a = new PrometheusWorkQueueMetrics(registry);
    const b = new PrometheusWorkQueueMetrics(registry);
    a.forQueue('x').add();
    b.forQueue('x').add();
    assert.equal(await metricValue(registry, 'workqueue_adds_total', { name: 'x' }), 2);
    new PrometheusReconcileMetrics(registry);
    new PrometheusReconcileMetrics(registry);

    const clash = new Registry();
    new Counter({ name: 'workqueue_depth', help: 'not a gauge', registers: [clash] });
    assert.throws(() => new PrometheusWorkQueueMetrics(clash), MetricsRegistrationError);
  });
});
