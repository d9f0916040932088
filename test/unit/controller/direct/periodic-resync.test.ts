import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { AttestedObject } from '../../../../src/api/attestation.js';
import { AttestationBook } from '../../../../src/controller/direct/attestation-book.js';
import {
  attestIntervalSeconds,
  bucketOf,
  OUT_OF_SYNC_PASS_INTERVAL_MS,
  PeriodicResync,
} from '../../../../src/controller/direct/periodic-resync.js';

const objects: AttestedObject[] = [
  { apiVersion: 'v1', kind: 'Secret', namespace: 'kyma-system', name: 'a', resourceVersion: '1' },
];
const PERIOD = 600_000;

function setup(keys: string[], o: { fullEvery?: number; works?: (key: string) => boolean } = {}) {
  const forced: string[] = [];
  const registry = new Registry();
  const resync = new PeriodicResync({
    periodMs: PERIOD,
    fullEvery: o.fullEvery ?? 6,
    keys: () => keys,
    keyOfRuntime: (id) => (keys.includes(`ns/${id}`) ? `ns/${id}` : undefined),
    works: o.works ?? (() => true),
    force: (key) => forced.push(key),
    book: new AttestationBook(attestIntervalSeconds(PERIOD)),
    registry,
    logger: pino({ level: 'silent' }),
  });
  // Each runtime echoes the challenge of its previous answer, as an attestor does.
  const challenges = new Map<string, string | undefined>();
  const recordAndAttest = (key: string, at: number): void => {
    resync.book.passEnded(key, { observed: objects, complete: true });
    if (!challenges.has(key)) {
      const first = resync.attest(key.slice(3), { objects: [] }, at);
      if (first.status === 200) challenges.set(key, first.answer.challenge);
    }
    const reply = resync.attest(key.slice(3), { objects, challenge: challenges.get(key) }, at);
    assert.equal(reply.status, 200);
    challenges.set(key, reply.answer.challenge);
  };
  return { resync, forced, registry, recordAndAttest };
}

describe('PeriodicResync', () => {
  test('without attestations every runtime is forced', () => {
    const keys = ['ns/a', 'ns/b', 'ns/c'];
    const { resync, forced } = setup(keys);
    assert.deepEqual(resync.tick(), { forced: 3, skipped: 0 });
    assert.deepEqual(forced, keys);
  });

  test('a runtime attested in sync within the period is skipped, except in its turn for a full pass', () => {
    const keys = Array.from({ length: 60 }, (_, i) => `ns/rt-${i}`);
    const { resync, forced, recordAndAttest } = setup(keys, { fullEvery: 6 });
    const now = Date.now();
    let total = 0;
    const seen = new Map<string, number>();
    for (let period = 1; period <= 6; period++) {
      for (const key of keys) recordAndAttest(key, now);
      forced.length = 0;
      const { forced: n, skipped } = resync.tick(now);
      assert.equal(n + skipped, keys.length);
      for (const key of forced) seen.set(key, (seen.get(key) ?? 0) + 1);
      total += n;
    }
    assert.equal(total, keys.length, 'over fullEvery periods each runtime had exactly one full pass');
    assert.ok([...seen.values()].every((v) => v === 1));
  });

  test('an attestation older than the period does not count', () => {
    const { resync, recordAndAttest } = setup(['ns/a'], { fullEvery: 1_000_000 });
    const now = Date.now();
    recordAndAttest('ns/a', now - PERIOD - 1);
    // bucketOf('ns/a', 1e6) is not the first tick's turn (1) for this key.
    assert.notEqual(bucketOf('ns/a', 1_000_000), 1);
    assert.deepEqual(resync.tick(now), { forced: 1, skipped: 0 });
  });

  test('an out-of-sync attestation against a complete record forces that runtime at once', () => {
    const { resync, forced } = setup(['ns/a', 'ns/b']);
    resync.book.passEnded('ns/a', { observed: objects, complete: true });
    const reply = resync.attest('a', { objects: [{ ...objects[0]!, resourceVersion: '2' }] }, Date.now());
    assert.equal(reply.status, 200);
    assert.deepEqual(forced, ['ns/a']);
    // Without a complete record, nothing to compare with: no pass (the next tick forces it anyway).
    resync.attest('b', { objects }, Date.now());
    assert.deepEqual(forced, ['ns/a']);
  });

  test('out-of-sync attestations of one runtime force at most one pass per interval; the last one in it is not lost', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 });
    const { resync, forced } = setup(['ns/a', 'ns/b']);
    resync.book.passEnded('ns/a', { observed: objects, complete: true });
    resync.book.passEnded('ns/b', { observed: objects, complete: true });
    const tampered = { objects: [{ ...objects[0]!, resourceVersion: '2' }] };
    resync.attest('b', tampered, Date.now());
    // 200 attestations over 20 s.
    for (let i = 0; i < 200; i++) {
      resync.attest('a', tampered, Date.now());
      t.mock.timers.tick(100);
    }
    assert.deepEqual(forced, ['ns/b', 'ns/a'], 'one pass each at once; the rest of the flood waits');
    t.mock.timers.tick(OUT_OF_SYNC_PASS_INTERVAL_MS - 20_000 - 1);
    assert.deepEqual(forced, ['ns/b', 'ns/a']);
    t.mock.timers.tick(1);
    assert.deepEqual(forced, ['ns/b', 'ns/a', 'ns/a'], 'the flood coalesced into one more pass at the end');
    t.mock.timers.tick(10 * OUT_OF_SYNC_PASS_INTERVAL_MS);
    assert.equal(forced.length, 3, 'nothing more without another attestation');
    resync.stop();
  });

  test('a runtime another replica works is answered 503 with a retry hint, and nothing is recorded', async () => {
    const { resync, forced, registry } = setup(['ns/a'], { works: () => false });
    const reply = resync.attest('a', { objects }, Date.now());
    if (reply.status !== 503) assert.fail(`expected 503, got ${String(reply.status)}`);
    assert.ok(reply.retryAfterSeconds >= 1 && reply.retryAfterSeconds <= 5, String(reply.retryAfterSeconds));
    assert.deepEqual(forced, []);
    assert.match(await registry.metrics(), /rtb_attestations_received_total\{verdict="elsewhere"\} 1/);
  });

  test('runtimes are told to attest within every period, with room for a slow exchange', () => {
    assert.equal(attestIntervalSeconds(600_000), 540);
    assert.equal(attestIntervalSeconds(3_600_000), 3240);
    assert.equal(attestIntervalSeconds(60_000), 42, 'never under 0.7 of a short period');
    assert.equal(attestIntervalSeconds(4_000), 2);
    assert.equal(attestIntervalSeconds(0), 300, 'without a timer: as with the default period');
    for (const ms of [30_000, 120_000, 600_000, 7_200_000])
      assert.ok(attestIntervalSeconds(ms) * 1000 < ms, String(ms));
  });

  test('bucketOf spreads keys over the shares and is stable', () => {
    const counts = [0, 0, 0, 0, 0, 0];
    for (let i = 0; i < 6000; i++) counts[bucketOf(`kcp-system/rt-${i}`, 6)]! += 1;
    assert.ok(
      counts.every((c) => c > 800 && c < 1200),
      counts.join(','),
    );
    assert.equal(bucketOf('x', 6), bucketOf('x', 6));
    assert.equal(bucketOf('x', 1), 0);
  });
});
