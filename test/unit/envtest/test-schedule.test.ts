import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  CPU_MARKER,
  EARLY_MARKER,
  hasMarker,
  nextJob,
  orderJobs,
  type TestJob,
} from '../../../scripts/test-schedule.js';

const job = (id: string, lane: TestJob['lane'] = 'main', early = false, cpuBound = false): TestJob => ({
  id,
  phase: lane,
  lane,
  files: [id],
  early,
  cpuBound,
  env: {},
});
const isEarlyFile = (source: string): boolean => hasMarker(source, EARLY_MARKER);

describe('the test schedule', () => {
  test('a file is early with the marker as a line of its own', () => {
    assert.ok(isEarlyFile('// test-schedule: early\nimport x from "y";\n'));
    assert.ok(!isEarlyFile("const s = '// test-schedule: early';\n"));
  });

  test('the end-to-end files that wait for the kubelet’s bundle cache are early', () => {
    for (const name of ['trust-bundle-refresh', 'webhook-features']) {
      const source = readFileSync(new URL(`../../e2e/${name}.test.ts`, import.meta.url), 'utf8');
      assert.ok(isEarlyFile(source), `test/e2e/${name}.test.ts is early`);
    }
  });

  test('the static check (type checker, linter, formatter) is CPU-bound', () => {
    const source = readFileSync(new URL('../../static/typecheck-and-lint.test.ts', import.meta.url), 'utf8');
    assert.ok(hasMarker(source, CPU_MARKER));
  });

  test('a CPU-bound job never starts beside another; the next one that may start does', () => {
    const widths = { main: 3, e2e: 2 };
    const [unit, lint, m1] = [job('unit', 'main', false, true), job('lint', 'main', false, true), job('m1')];
    assert.equal(nextJob([lint, m1], [unit], widths), m1);
    assert.equal(nextJob([lint], [unit, m1], widths), undefined);
    assert.equal(nextJob([lint], [m1], widths), lint);
    assert.equal(nextJob([lint], [], widths), lint);
  });

  test('early first, then the longest of the last run, never-timed ones before timed ones', () => {
    const jobs = [job('a'), job('b'), job('c', 'e2e', true), job('d'), job('e')];
    const order = orderJobs(jobs, { a: 10, b: 300, d: 40 }).map((j) => j.id);
    assert.deepEqual(order, ['c', 'e', 'b', 'd', 'a']);
    assert.deepEqual(
      orderJobs(jobs, {}).map((j) => j.id),
      ['c', 'a', 'b', 'd', 'e'],
    );
  });

  test('a lane runs up to its width; one unmarked end-to-end job at a time, early ones beside it', () => {
    const widths = { main: 2, e2e: 2 };
    const [m1, m2, m3] = [job('m1'), job('m2'), job('m3')];
    const [slow, wait1, wait2] = [job('slow', 'e2e'), job('w1', 'e2e', true), job('w2', 'e2e', true)];
    const other = job('other', 'e2e');
    assert.equal(nextJob([m3, other], [m1, m2], widths), other);
    assert.equal(nextJob([m3, other], [m1, m2, slow], widths), undefined);
    assert.equal(nextJob([other, wait1], [slow], widths), wait1);
    assert.equal(nextJob([other], [wait1], widths), other);
    assert.equal(nextJob([wait2], [wait1, slow], widths), undefined);
    assert.equal(nextJob([m3], [m1], widths), m3);
    assert.equal(nextJob([m3], [m1, slow], widths), m3);
    assert.equal(
      nextJob([other, m3], [m1], widths, (j) => j.lane === 'main'),
      m3,
    );
  });

  test('a node at work beside a CPU-bound job takes one of the main lane’s places; an early (waiting) one does not', () => {
    const widths = { main: 2, e2e: 2 };
    const [unit, lint, m1, m2] = [
      job('unit', 'main', false, true),
      job('lint', 'main', false, true),
      job('m1'),
      job('m2'),
    ];
    const [slow, wait1] = [job('slow', 'e2e'), job('w1', 'e2e', true)];
    // Beside a node: no second main job next to a CPU-bound one, in either order.
    assert.equal(nextJob([m2], [unit, slow], widths), undefined);
    assert.equal(nextJob([lint], [m1, slow], widths), undefined);
    assert.equal(nextJob([lint], [slow], widths), lint);
    // An early end-to-end job is no node at work.
    assert.equal(nextJob([m2], [unit, wait1], widths), m2);
    // No node is started where it would leave the main lane over that width; with room it is.
    assert.equal(nextJob([slow], [unit, m1], widths), undefined);
    assert.equal(nextJob([slow], [unit], widths), slow);
    assert.equal(nextJob([slow], [m1, m2], widths), slow);
    assert.equal(nextJob([m2], [unit], { main: 1, e2e: 2 }), undefined);
    assert.equal(nextJob([m2], [slow], { main: 1, e2e: 2 }), m2);
  });
});
