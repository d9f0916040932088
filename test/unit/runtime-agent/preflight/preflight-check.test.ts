import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_FAILURE_SAMPLES, readPreflight, writePreflight } from '../../../../src/api/workload-health.js';
import { checkImages, type ImageProber } from '../../../../src/runtime-agent/preflight/preflight-check.js';
import type { PlannedImage } from '../../../../src/runtime-agent/preflight/preflight-plan.js';
import { doneReport, runningReport } from '../../../../src/runtime-agent/preflight/preflight-report.js';
import {
  ProbeAbortedError,
  type ProbeOutcome,
} from '../../../../src/runtime-agent/preflight/registry-probe.js';

const planned = (n: number): PlannedImage[] =>
  Array.from({ length: n }, (_, i) => ({
    image: `src.example.com/app${i}:1`,
    target: `dst.example.com/app${i}:1`,
  }));

/** A prober that answers after `ms`, with `outcome(target)`, and counts how many run at once. */
function fakeProber(ms: number, outcome: (target: string) => ProbeOutcome = () => ({ result: 'ok' })) {
  let inFlight = 0;
  let peak = 0;
  const seen: string[] = [];
  const prober: ImageProber = {
    probe: (target, signal) =>
      new Promise((resolve, reject) => {
        seen.push(target);
        inFlight++;
        peak = Math.max(peak, inFlight);
        const timer = setTimeout(() => {
          inFlight--;
          resolve(outcome(target));
        }, ms);
        signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          inFlight--;
          reject(new ProbeAbortedError('aborted'));
        });
      }),
  };
  return { prober, peak: () => peak, seen };
}

describe('checkImages', () => {
  test('probes every target once, at most `concurrency` at a time, results in plan order', async () => {
    const f = fakeProber(5, (t) =>
      t.includes('app3') ? { result: 'missing', detail: 'x' } : { result: 'ok' },
    );
    const result = await checkImages(planned(20), f.prober, { concurrency: 3 });
    assert.equal(f.peak(), 3);
    assert.equal(result.checked.length, 20);
    assert.equal(result.notChecked, 0);
    assert.equal(result.outOfTime, false);
    assert.deepEqual(
      result.checked.map((c) => c.target),
      planned(20).map((p) => p.target),
    );
    assert.deepEqual(result.checked[3]?.outcome, { result: 'missing', detail: 'x' });
    assert.deepEqual(
      [...f.seen].sort(),
      planned(20)
        .map((p) => p.target)
        .sort(),
    );
  });

  test('the time budget ends the check: the rest is not checked, never guessed', async () => {
    const f = fakeProber(60);
    const result = await checkImages(planned(10), f.prober, { concurrency: 2, budgetMs: 150 });
    assert.equal(result.outOfTime, true);
    assert.ok(result.checked.length >= 2 && result.checked.length <= 6, String(result.checked.length));
    assert.equal(result.checked.length + result.notChecked, 10);
  });

  test("the caller's signal ends it the same way", async () => {
    const f = fakeProber(50);
    const controller = new AbortController();
    setTimeout(() => {
      controller.abort();
    }, 75);
    const result = await checkImages(planned(10), f.prober, { concurrency: 1, signal: controller.signal });
    assert.equal(result.checked.length, 1);
    assert.equal(result.notChecked, 9);
    assert.equal(result.outOfTime, false);
  });

  test('nothing to check: done at once', async () => {
    assert.deepEqual(await checkImages([], fakeProber(1).prober), {
      checked: [],
      notChecked: 0,
      outOfTime: false,
    });
  });

  test('a prober that throws anything but an abort fails the check', async () => {
    const prober: ImageProber = { probe: () => Promise.reject(new TypeError('bug')) };
    await assert.rejects(checkImages(planned(2), prober), TypeError);
  });
});

describe('preflight reports', () => {
  const started = new Date('2026-11-27T10:00:00Z');
  const finished = new Date('2026-11-27T10:00:07Z');

  test('running: zeros and no samples; valid by the contract', () => {
    const r = runningReport('v2', started);
    assert.deepEqual(readPreflight(writePreflight(r)), r);
    assert.equal(r.phase, 'running');
  });

  test('done: counts each outcome, skipped adds the bound and the budget, missing samples first', () => {
    const checked = [
      ...planned(3).map((p) => ({ ...p, outcome: { result: 'ok' as const } })),
      ...planned(4).map((p, i) => ({
        ...p,
        target: `u${i}`,
        outcome: { result: 'unreachable' as const, detail: 'timeout' },
      })),
      { image: 'i1', target: 't1', outcome: { result: 'refused' as const, detail: '401' } },
      { image: 'i2', target: 't2', outcome: { result: 'missing' as const } },
    ];
    const r = doneReport('v2', { skipped: 5 }, { checked, notChecked: 2 }, started, finished);
    // Compared as written: a sample without a detail has it undefined, and JSON leaves it out.
    assert.deepEqual(
      readPreflight(writePreflight(r)),
      JSON.parse(writePreflight(r)),
      'the contract reads it back',
    );
    assert.equal(r.checked, 9);
    assert.equal(r.skipped, 7);
    assert.deepEqual([r.missing, r.refused, r.unreachable], [1, 1, 4]);
    assert.equal(r.samples.length, MAX_FAILURE_SAMPLES);
    assert.deepEqual(r.samples[0], { image: 'i2', target: 't2', result: 'missing', detail: undefined });
    assert.deepEqual(r.samples[1], { image: 'i1', target: 't1', result: 'refused', detail: '401' });
    assert.equal(r.samples[2]?.target, 'u0', 'within a kind, plan order');
    assert.equal(r.finishedAt, finished.toISOString());
  });

  test('long fields are cut to the contract bounds', () => {
    const long = 'x'.repeat(2_000);
    const r = doneReport(
      'v',
      { skipped: 0 },
      {
        checked: [{ image: long, target: long, outcome: { result: 'missing', detail: long } }],
        notChecked: 0,
      },
      started,
      finished,
    );
    assert.ok(readPreflight(writePreflight(r)) !== undefined);
    const [sample] = r.samples;
    assert.ok(sample);
    assert.equal(sample.image.length, 1024);
    assert.equal(sample.detail?.length, 512);
  });
});
