import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import {
  DriftForwarder,
  DriftForwarderError,
  type DriftForwarderOptions,
} from '../../../src/drift/drift-forwarder.js';
import type { WatchEvent } from '../../../src/drift/watch-event.js';
import { captureLogs } from '../../support/log-capture.js';
import { useScriptedListener, ScriptedServer } from './scripted-server.js';
import { metricValue, newCa, runtimeClientCert, waitFor, writeClientFiles } from './tls-fixtures.js';

const event = (name: string): WatchEvent => ({
  watched: { Namespace: 'kyma-system', Name: name },
  watchedGvk: { group: '', version: 'v1', kind: 'Secret' },
});

describe('DriftForwarder', () => {
  const l = useScriptedListener('forwarder');

  const forwarder = (
    opts: Partial<DriftForwarderOptions> = {},
  ): { f: DriftForwarder; registry: Registry } => {
    const registry = new Registry();
    const f = new DriftForwarder({
      ...l.clientOptions(registry),
      backoff: { baseMs: 10, maxMs: 50 },
      ...opts,
    });
    l.track(() => f.stop());
    return { f, registry };
  };

  /** Waits for the first request (held by the script) and accepts it. */
  const acceptFirstHeld = async (): Promise<void> => {
    await waitFor(() => l.server.seen.length === 1, 'the first request');
    l.server.seen[0]!.res.writeHead(202).end();
  };

  const reset = (answer: ScriptedServer['answer'] = () => ({ status: 202 })): void => {
    l.server.seen.length = 0;
    l.server.answer = answer;
  };

  test('delivers in order, over one keep-alive mTLS connection, without making the caller wait', async () => {
    reset();
    const { f, registry } = forwarder();
    const before = l.server.connections;
    for (let i = 0; i < 20; i++) f.send(event(`s-${i}`));
    assert.equal(l.server.seen.length, 0, 'send() returned before anything reached the server');
    await f.flush(10_000);
    assert.deepEqual(
      l.server.seen.map((s) => (JSON.parse(s.body) as WatchEvent).watched.Name),
      Array.from({ length: 20 }, (_, i) => `s-${i}`),
    );
    assert.ok(l.server.seen.every((s) => s.path === '/v2/rt-bootstrapper/event' && s.cn === 'rt-1'));
    assert.equal(l.server.connections - before, 1, 'one connection for all events');
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_sends_total', { result: 'success' }), 20);
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_queue_depth'), 0);
  });

  test('identical waiting events are merged; one sent while an identical one is in flight is not', async () => {
    reset((n) => (n === 1 ? 'hold' : { status: 202 }));
    const { f, registry } = forwarder();
    f.send(event('a')); // in flight, held
    f.send(event('a')); // waits
    f.send(event('a')); // merged into the waiting one
    f.send(event('b'));
    f.send(event('b')); // merged
    await acceptFirstHeld();
    await f.flush(10_000);
    assert.deepEqual(
      l.server.seen.map((s) => (JSON.parse(s.body) as WatchEvent).watched.Name),
      ['a', 'a', 'b'],
    );
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_deduplicated_total'), 2);
  });

  test('5xx is retried with backoff until accepted', async () => {
    reset((n) => ({ status: n <= 2 ? 503 : 202 }));
    const { f, registry } = forwarder();
    f.send(event('retry-me'));
    await f.flush(10_000);
    assert.equal(l.server.seen.length, 3);
    assert.equal(
      await metricValue(registry, 'rtb_drift_forwarder_sends_total', { result: 'server_error' }),
      2,
    );
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_retries_total'), 2);
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_sends_total', { result: 'success' }), 1);
  });

  test('429 waits at least as long as Retry-After says', async () => {
    reset((n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 202 }));
    const { f, registry } = forwarder();
    f.send(event('throttled'));
    await f.flush(10_000);
    assert.equal(l.server.seen.length, 2);
    const gap = l.server.seen[1]!.at - l.server.seen[0]!.at;
    // A lower bound only: the backoff would have retried after 10 ms.
    assert.ok(gap >= 950, `retried after ${gap} ms`);
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_sends_total', { result: 'throttled' }), 1);
  });

  test('other 4xx answers drop the event at once; the next one is still sent', async () => {
    reset((n) => ({ status: n === 1 ? 403 : 202 }));
    const { f, registry } = forwarder();
    f.send(event('refused'));
    f.send(event('fine'));
    await f.flush(10_000);
    assert.equal(l.server.seen.length, 2);
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_dropped_total', { reason: 'rejected' }), 1);
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_retries_total'), 0);
  });

  test('an unreachable listener: dropped after maxAttempts, with the attempts counted', async () => {
    const { f, registry } = forwarder({ url: 'https://127.0.0.1:1', maxAttempts: 3 });
    f.send(event('lost'));
    await f.flush(10_000);
    assert.equal(
      await metricValue(registry, 'rtb_drift_forwarder_sends_total', { result: 'network_error' }),
      3,
    );
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_retries_total'), 2);
    assert.equal(
      await metricValue(registry, 'rtb_drift_forwarder_dropped_total', { reason: 'max_attempts' }),
      1,
    );
  });

  test('a listener that never answers times out and counts as a network error', async () => {
    reset(() => 'hold');
    const { f, registry } = forwarder({ requestTimeoutMs: 200, maxAttempts: 2 });
    f.send(event('slow'));
    await f.flush(10_000);
    assert.equal(l.server.seen.length, 2);
    assert.equal(
      await metricValue(registry, 'rtb_drift_forwarder_dropped_total', { reason: 'max_attempts' }),
      1,
    );
    for (const s of l.server.seen) s.res.destroy();
  });

  test('a full queue drops new events and counts them', async () => {
    reset((n) => (n === 1 ? 'hold' : { status: 202 }));
    const { f, registry } = forwarder({ maxQueue: 2 });
    for (let i = 0; i < 5; i++) f.send(event(`q-${i}`));
    assert.equal(
      await metricValue(registry, 'rtb_drift_forwarder_dropped_total', { reason: 'queue_full' }),
      2,
    );
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_queue_depth'), 3);
    await acceptFirstHeld();
    await f.flush(10_000);
    assert.deepEqual(
      l.server.seen.map((s) => (JSON.parse(s.body) as WatchEvent).watched.Name),
      ['q-0', 'q-1', 'q-2'],
    );
  });

  test('flush rejects when it runs out of time; stop drops what is left and aborts the request', async () => {
    reset(() => 'hold');
    const { f, registry } = forwarder({ requestTimeoutMs: 60_000 });
    f.send(event('x'));
    f.send(event('y'));
    await assert.rejects(f.flush(100), DriftForwarderError);
    await f.stop();
    f.send(event('z'));
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_dropped_total', { reason: 'stopped' }), 3);
    assert.equal(await metricValue(registry, 'rtb_drift_forwarder_queue_depth'), 0);
    await f.flush(100); // nothing left
  });

  test('missing TLS files: send still returns, attempts count as no_tls_material, delivered once they appear', async () => {
    reset();
    const missing = join(l.dir, 'later');
    const { f, registry } = forwarder({
      tls: {
        certFile: join(missing, 'tls.crt'),
        keyFile: join(missing, 'tls.key'),
        caFile: join(missing, 'ca.crt'),
      },
      backoff: { baseMs: 50, maxMs: 50 },
      maxAttempts: 100,
    });
    f.send(event('early'));
    await waitFor(
      async () =>
        (await metricValue(registry, 'rtb_drift_forwarder_sends_total', { result: 'no_tls_material' })) >= 2,
      'failed attempts',
    );
    const { mkdir, cp } = await import('node:fs/promises');
    await mkdir(missing);
    await cp(l.files.certFile, join(missing, 'tls.crt'));
    await cp(l.files.keyFile, join(missing, 'tls.key'));
    await cp(l.files.caFile, join(missing, 'ca.crt'));
    await f.flush(10_000);
    assert.equal(l.server.seen.length, 1);
  });

  test('logs name dropped events (a full queue once per period) and never carry key material', async () => {
    reset((n) => (n === 1 ? 'hold' : { status: 202 }));
    const { logger, raw: lines } = captureLogs();
    // A key that does not belong to the certificate: the forwarder must say so without quoting it.
    const mismatched = join(l.dir, 'mismatched');
    const { mkdir, cp, readFile } = await import('node:fs/promises');
    await mkdir(mismatched);
    const other = await runtimeClientCert(await newCa('other'), 'rt-1', 'rt-1.example');
    const badFiles = await writeClientFiles(mismatched, other, await readFile(l.files.caFile, 'utf8'));
    await cp(l.files.keyFile, badFiles.keyFile);
    const { f: bad } = forwarder({ tls: badFiles, logger, maxAttempts: 2 });
    bad.send(event('never'));
    await bad.flush(10_000);
    const { f } = forwarder({ logger, maxQueue: 1 });
    for (let i = 0; i < 6; i++) f.send(event(`storm-${i}`));
    await acceptFirstHeld();
    await f.flush(10_000);
    const text = lines.join('');
    const dropped = lines.filter((l) => l.includes('"msg":"drift event dropped"'));
    assert.equal(
      dropped.filter((l) => l.includes('"reason":"queue_full"')).length,
      1,
      'one line for 4 drops',
    );
    assert.equal(dropped.filter((l) => l.includes('"reason":"max_attempts"')).length, 1);
    assert.ok(dropped.every((l) => l.includes('"namespace":"kyma-system"')));
    assert.ok(text.includes('no usable client certificate'));
    const keyPems = [await readFile(l.files.keyFile, 'utf8'), other.keyPem];
    for (const pem of keyPems) {
      const body = pem.split('\n')[1]!;
      assert.ok(!text.includes(body), 'no private key in the logs');
    }
    assert.ok(!text.includes('PRIVATE KEY'));
  });

  test('the URL must be https; its path is kept and the event path appended', async () => {
    assert.throws(() => forwarder({ url: 'http://127.0.0.1:1' }), DriftForwarderError);
    reset();
    const { f } = forwarder({ url: `${l.url}/` });
    f.send(event('slash'));
    await f.flush(10_000);
    assert.equal(l.server.seen[0]?.path, '/v2/rt-bootstrapper/event');
  });
});
