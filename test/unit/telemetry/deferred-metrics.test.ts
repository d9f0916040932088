import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { DeferredCounter, DeferredHistogram } from '../../../src/telemetry/deferred-metrics.js';

const BUCKETS = [0.001, 0.01, 0.1, 1];

/** The text a scrape of a registry with only this metric prints. */
async function scrape(register: (registers: Registry[]) => void): Promise<string> {
  const registry = new Registry();
  register([registry]);
  return registry.metrics();
}

void describe('deferred metrics', () => {
  test('a deferred counter scrapes exactly as the same increments on a prom-client Counter', async () => {
    const values = ['mutated', 'unchanged', 'mutated', 'error', 'mutated', 'unchanged'] as const;
    const direct = await scrape((registers) => {
      const c = new Counter({ name: 'requests_total', help: 'h', labelNames: ['result'], registers });
      for (const v of values) c.inc({ result: v });
    });
    const registry = new Registry();
    const deferred = new DeferredCounter({
      name: 'requests_total',
      help: 'h',
      labelName: 'result',
      registers: [registry],
    });
    for (const v of values) deferred.inc(v);
    assert.equal(await registry.metrics(), direct);
    // A second scrape adds only what came since (nothing counted twice).
    deferred.inc('error');
    const again = await registry.metrics();
    assert.match(again, /requests_total\{result="error"\} 2\n/);
    assert.match(again, /requests_total\{result="mutated"\} 3\n/);
    assert.equal(await registry.metrics(), again);
  });

  test('get() folds pending increments in as a scrape does', async () => {
    const registry = new Registry();
    const c = new DeferredCounter<'hit'>({
      name: 'reuse_total',
      help: 'h',
      labelName: 'outcome',
      registers: [registry],
    });
    c.inc('hit');
    c.inc('hit');
    const values = (await c.metric.get()).values.map((v) => [v.labels.outcome, v.value]);
    assert.deepEqual(values, [['hit', 2]]);
  });

  test('a deferred histogram scrapes exactly as the same observations, across batch boundaries', async () => {
    // Many batches (32) for one label value, and a partial one for another.
    const observations = Array.from({ length: 700 }, (_, i) => ({
      result: i % 5 === 0 ? 'unchanged' : 'mutated',
      seconds: ((i * 7919) % 1000) / 997,
    }));
    const direct = await scrape((registers) => {
      const h = new Histogram({
        name: 'duration_seconds',
        help: 'h',
        labelNames: ['result'],
        buckets: BUCKETS,
        registers,
      });
      for (const o of observations) h.observe({ result: o.result }, o.seconds);
    });
    const registry = new Registry();
    const h = new DeferredHistogram<string>({
      name: 'duration_seconds',
      help: 'h',
      labelName: 'result',
      buckets: BUCKETS,
      registers: [registry],
    });
    for (const o of observations) h.observe(o.result, o.seconds);
    // The series may come in another order (the first batch handed over goes first).
    const lines = (text: string): string[] => text.split('\n').sort();
    assert.deepEqual(lines(await registry.metrics()), lines(direct));
    assert.deepEqual(lines(await registry.metrics()), lines(direct), 'a second scrape adds nothing');
  });
});
