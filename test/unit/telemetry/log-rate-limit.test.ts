import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { LogRateLimit } from '../../../src/telemetry/log-rate-limit.js';
import { captureLogs } from '../../support/log-capture.js';

describe('LogRateLimit', () => {
  beforeEach(() => {
    mock.timers.enable({ apis: ['setTimeout'] });
  });
  afterEach(() => {
    mock.timers.reset();
  });

  const summaries = (lines: Record<string, unknown>[]): Record<string, unknown>[] =>
    lines.filter((l) => typeof l.suppressed === 'number');

  test('writes the first N lines of a kind per interval, then one line with the count suppressed', () => {
    const { logger, lines } = captureLogs();
    const limit = new LogRateLimit(logger, { perInterval: 3, intervalMs: 1_000 });
    for (let i = 0; i < 100; i++) limit.warn(logger, { i }, 'cannot read namespace');
    assert.equal(lines().length, 3);
    assert.deepEqual(
      lines().map((l) => l.i),
      [0, 1, 2],
    );
    mock.timers.tick(1_000);
    const summary = summaries(lines());
    assert.equal(summary.length, 1);
    assert.equal(summary[0]!.suppressed, 97);
    assert.equal(summary[0]!.kind, 'cannot read namespace');
    assert.equal(summary[0]!.msg, 'suppressed 97 more lines: cannot read namespace');
    assert.equal(summary[0]!.level, 'warn');
  });

  test('a new interval writes again; a quiet interval writes no summary', () => {
    const { logger, lines } = captureLogs();
    const limit = new LogRateLimit(logger, { perInterval: 2, intervalMs: 1_000 });
    for (let i = 0; i < 2; i++) limit.warn(logger, {}, 'a');
    mock.timers.tick(1_000);
    assert.equal(lines().length, 2, 'nothing was suppressed, so no summary');
    for (let i = 0; i < 5; i++) limit.warn(logger, {}, 'a');
    assert.equal(lines().length, 4);
    mock.timers.tick(1_000);
    assert.equal(summaries(lines())[0]?.suppressed, 3);
  });

  test('kinds are limited separately', () => {
    const { logger, lines } = captureLogs();
    const limit = new LogRateLimit(logger, { perInterval: 1, intervalMs: 1_000 });
    for (let i = 0; i < 3; i++) {
      limit.warn(logger, {}, 'a');
      limit.error(logger, {}, 'b');
    }
    assert.deepEqual(
      lines().map((l) => `${String(l.level)} ${String(l.msg)}`),
      ['warn a', 'error b'],
    );
    mock.timers.tick(1_000);
    assert.deepEqual(
      summaries(lines()).map((l) => [l.kind, l.suppressed]),
      [
        ['a', 2],
        ['b', 2],
      ],
    );
  });

  test('allow() lets a caller skip building its line; flush() writes pending summaries at once', () => {
    const { logger, lines } = captureLogs();
    const limit = new LogRateLimit(logger, { perInterval: 1, intervalMs: 60_000 });
    assert.equal(limit.allow('k'), true);
    assert.equal(limit.allow('k'), false);
    assert.equal(limit.allow('k'), false);
    limit.flush();
    assert.equal(summaries(lines())[0]?.suppressed, 2);
    assert.equal(limit.allow('k'), true, 'flush starts a new interval');
  });

  test('defaults: 5 lines per 10 s', () => {
    const { logger, lines } = captureLogs();
    const limit = new LogRateLimit(logger);
    for (let i = 0; i < 20; i++) limit.warn(logger, {}, 'x');
    assert.equal(lines().length, 5);
    mock.timers.tick(9_999);
    assert.equal(lines().length, 5);
    mock.timers.tick(1);
    assert.equal(summaries(lines())[0]?.suppressed, 15);
  });
});
