import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseRetryAfter } from '../../../src/drift/retry-after.js';

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  test('reads delay-seconds and HTTP dates, capped and never negative', () => {
    assert.equal(parseRetryAfter('3', 60_000, now), 3000);
    assert.equal(parseRetryAfter(' 0 ', 60_000, now), 0);
    assert.equal(parseRetryAfter('86400', 60_000, now), 60_000);
    assert.equal(parseRetryAfter('Wed, 01 Jan 2025 00:00:05 GMT', 60_000, now), 5000);
    assert.equal(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', 60_000, now), 0);
    assert.equal(parseRetryAfter(['2', '9'], 60_000, now), 2000);
  });

  test('absent or unreadable is undefined, so the caller backs off on its own', () => {
    for (const v of [undefined, '', '-1', '1.5', 'soon', []]) {
      assert.equal(parseRetryAfter(v, 60_000, now), undefined, String(v));
    }
  });
});
