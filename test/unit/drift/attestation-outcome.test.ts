import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  ANSWER_JITTER_FLOOR,
  answerWaitMs,
  judgeExchange,
  retryWaitMs,
} from '../../../src/drift/attestation-outcome.js';

const cap = 300_000;
const answer = {
  inSync: true,
  check: [{ apiVersion: 'v1', kind: 'Namespace', namespace: '', name: 'x' }],
  nextAfterSeconds: 600,
};

describe('judgeExchange', () => {
  test('a 200 with a valid answer is answered', () => {
    assert.deepEqual(judgeExchange(200, undefined, Buffer.from(JSON.stringify(answer)), cap), {
      kind: 'answered',
      answer,
    });
  });

  test('a 200 that is not an answer is retried, the reason naming the field and not the body', () => {
    const x = judgeExchange(
      200,
      undefined,
      Buffer.from('{"inSync":"secret-ish","check":[],"nextAfterSeconds":1}'),
      cap,
    );
    if (x.kind !== 'retry') assert.fail(JSON.stringify(x));
    assert.ok(x.why.includes('inSync') && !x.why.includes('secret-ish'), x.why);
    assert.equal(judgeExchange(200, undefined, Buffer.from('<html>'), cap).kind, 'retry');
    assert.equal(judgeExchange(200, undefined, Buffer.alloc(0), cap).kind, 'retry');
  });

  test('408, 429 and 5xx are retried, with their Retry-After (capped)', () => {
    assert.deepEqual(judgeExchange(503, '7', Buffer.alloc(0), cap), {
      kind: 'retry',
      why: 'HTTP 503',
      retryAfterMs: 7000,
    });
    assert.deepEqual(judgeExchange(429, '86400', Buffer.alloc(0), cap), {
      kind: 'retry',
      why: 'HTTP 429',
      retryAfterMs: cap,
    });
    const now = Date.parse('2030-01-01T00:00:00Z');
    assert.deepEqual(judgeExchange(429, 'Tue, 01 Jan 2030 00:00:05 GMT', Buffer.alloc(0), cap, now), {
      kind: 'retry',
      why: 'HTTP 429',
      retryAfterMs: 5000,
    });
    assert.deepEqual(judgeExchange(408, undefined, Buffer.alloc(0), cap), {
      kind: 'retry',
      why: 'HTTP 408',
      retryAfterMs: undefined,
    });
    assert.deepEqual(judgeExchange(500, 'soon', Buffer.alloc(0), cap), {
      kind: 'retry',
      why: 'HTTP 500',
      retryAfterMs: undefined,
    });
  });

  test('other statuses are refusals', () => {
    for (const status of [400, 401, 403, 404, 413, 202, 204, 302])
      assert.deepEqual(judgeExchange(status, '1', Buffer.from(JSON.stringify(answer)), cap), {
        kind: 'refused',
        status,
      });
  });
});

describe('attestation waits', () => {
  test('the wait asked for, times a uniform factor in [0.8, 1.0]', () => {
    assert.equal(ANSWER_JITTER_FLOOR, 0.8);
    assert.equal(
      answerWaitMs(600, () => 0),
      480_000,
    );
    assert.equal(
      answerWaitMs(600, () => 0.5),
      540_000,
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 86_400 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (seconds, r) => {
          const ms = answerWaitMs(seconds, () => r);
          return ms >= seconds * 800 && ms <= seconds * 1000;
        },
      ),
    );
  });

  test('a random source out of range cannot push the wait out of its bounds', () => {
    assert.equal(
      answerWaitMs(10, () => -3),
      8000,
    );
    assert.equal(
      answerWaitMs(10, () => 7),
      10_000,
    );
  });

  test('after a failure: the backoff, or a longer Retry-After plus jitter', () => {
    assert.equal(
      retryWaitMs(4000, undefined, 0.2, () => 0.9),
      4000,
    );
    assert.equal(
      retryWaitMs(4000, 1000, 0.2, () => 0.9),
      4000,
    );
    assert.equal(Math.round(retryWaitMs(1000, 7000, 0.2, () => 0.5)), 7700);
    assert.equal(
      retryWaitMs(1000, 0, 0.2, () => 0.5),
      1000,
      'Retry-After: 0 does not make a busy loop',
    );
  });
});
