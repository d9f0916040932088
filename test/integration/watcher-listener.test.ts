// The drift channel end to end on loopback: our own mTLS listener and forwarder, no API server.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { Registry } from 'prom-client';
import type { CertificateAuthority } from '../../src/pki/certificate-authority.js';
import type { IssuedCertificate } from '../../src/pki/issue-certificate.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { DriftForwarder } from '../../src/drift/drift-forwarder.js';
import { EventListener, refusalHoldMs, type EventListenerOptions } from '../../src/drift/event-listener.js';
import { WATCH_EVENT_PATH, encodeWatchEvent, type WatchEvent } from '../../src/drift/watch-event.js';
import {
  call,
  loopbackServingCert,
  metricValue,
  newCa,
  runtimeClientCert,
  waitFor,
  writeClientFiles,
} from '../unit/drift/tls-fixtures.js';
import type { Reply } from '../support/https-call.js';
import { captureLogs } from '../support/log-capture.js';

const DOMAINS: Record<string, string> = { 'rt-1': 'rt-1.kyma.example', 'rt-2': 'rt-2.kyma.example' };
const event = (name: string): WatchEvent => ({
  watched: { Namespace: 'kyma-system', Name: name },
  watchedGvk: { group: '', version: 'v1', kind: 'Secret' },
});

interface Received {
  readonly runtimeId: string;
  readonly event: WatchEvent;
  readonly receivedAt: number;
}

/** A listener on a loopback port with its own registry and a log of what it handed on. */
async function startListener(
  ca: CertificateAuthority,
  serving: IssuedCertificate,
  options: Partial<EventListenerOptions> = {},
): Promise<{ listener: EventListener; port: number; received: Received[]; registry: Registry }> {
  const received: Received[] = [];
  const registry = new Registry();
  const listener = new EventListener({
    tls: { certPem: serving.certPem, keyPem: serving.keyPem },
    trustedCaPems: [ca.certPem],
    host: '127.0.0.1',
    port: 0,
    lookupRuntime: (id) => (DOMAINS[id] === undefined ? undefined : { domain: DOMAINS[id] }),
    onEvent: (runtimeId, e, receivedAt) => received.push({ runtimeId, event: e, receivedAt }),
    registry,
    logger: silentLogger(),
    ...options,
  });
  return { listener, port: await listener.listen(), received, registry };
}

async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) =>
    s.close(() => {
      r();
    }),
  );
  return port;
}

describe('the drift listener over mutual TLS', () => {
  let ca: CertificateAuthority;
  let otherCa: CertificateAuthority;
  let serving: IssuedCertificate;
  let rt1: IssuedCertificate;
  let rt2: IssuedCertificate;
  let l: Awaited<ReturnType<typeof startListener>>;
  const logs = captureLogs();
  const logLines = logs.raw;
  const post = (client: IssuedCertificate | undefined, extra: Partial<Parameters<typeof call>[0]> = {}) =>
    call({
      port: l.port,
      client,
      serverCaPem: ca.certPem,
      body: encodeWatchEvent(event('registry-credentials')),
      ...extra,
    });

  before(async () => {
    [ca, otherCa] = await Promise.all([newCa('drift-ca'), newCa('another-ca')]);
    serving = await loopbackServingCert(ca);
    [rt1, rt2] = await Promise.all([
      runtimeClientCert(ca, 'rt-1', 'rt-1.kyma.example'),
      runtimeClientCert(ca, 'rt-2', 'other.example', 'rt-2.kyma.example'),
    ]);
    l = await startListener(ca, serving, {
      rateLimit: { perSecond: 5, burst: 5 },
      logger: logs.logger,
    });
  });

  after(async () => {
    await l.listener.close();
  });

  test('a valid event is accepted (202) and handed on with the runtime ID', async () => {
    const before = Date.now();
    const reply = await post(rt1);
    assert.equal(reply.status, 202);
    const last = l.received.at(-1);
    assert.equal(last?.runtimeId, 'rt-1');
    assert.deepEqual(last.event, event('registry-credentials'));
    assert.ok(last.receivedAt >= before && last.receivedAt <= Date.now());
    assert.equal(await metricValue(l.registry, 'rtb_drift_listener_requests_total', { code: '202' }), 1);
    assert.equal(
      await metricValue(l.registry, 'rtb_drift_listener_events_accepted_total', { kind: 'Secret' }),
      1,
    );
    const hist = (await l.registry.getMetricsAsJSON()).find(
      (m) => m.name === 'rtb_drift_listener_request_duration_seconds',
    );
    assert.ok(
      hist?.values.some(
        (v) => (v as { metricName?: string }).metricName?.endsWith('_count') === true && v.value >= 1,
      ),
    );
  });

  test('a client certificate of another CA, or none, is refused in the TLS handshake', async () => {
    const foreign = await runtimeClientCert(otherCa, 'rt-1', 'rt-1.kyma.example');
    const failuresBefore = await metricValue(l.registry, 'rtb_drift_listener_tls_handshake_failures_total');
    await assert.rejects(post(foreign), (error: NodeJS.ErrnoException) => {
      assert.ok(error.code !== undefined, `a connection error, got ${String(error)}`);
      return true;
    });
    await assert.rejects(post(undefined));
    await waitFor(
      async () =>
        (await metricValue(l.registry, 'rtb_drift_listener_tls_handshake_failures_total')) >=
        failuresBefore + 2,
      'handshake failures counted',
    );
  });

  test("SAN pinning: the right CA but a domain not the runtime's, or an unknown runtime, is 403", async () => {
    const wrongDomain = await runtimeClientCert(ca, 'rt-1', 'rt-2.kyma.example');
    const unknown = await runtimeClientCert(ca, 'rt-9', 'rt-9.kyma.example');
    const count = l.received.length;
    assert.equal((await post(wrongDomain)).status, 403);
    assert.equal((await post(unknown)).status, 403);
    assert.equal(l.received.length, count, 'nothing handed on');
    const rejected = (reason: string) =>
      metricValue(l.registry, 'rtb_drift_listener_rejected_verifications_total', { reason });
    assert.equal(await rejected('san_mismatch'), 1);
    assert.equal(await rejected('unknown_runtime'), 1);
    assert.equal((await post(rt2)).status, 202, 'one matching SAN among several is enough');
  });

  test('405 for other methods, 404 for other paths, 400 for malformed bodies, 413 for big ones', async () => {
    const get = await post(rt2, { method: 'GET', body: undefined });
    assert.equal(get.status, 405);
    assert.equal(get.headers.allow, 'POST');
    assert.equal((await post(rt2, { path: '/v1/event' })).status, 404);
    assert.equal((await post(rt2, { path: `${WATCH_EVENT_PATH}/x` })).status, 404);
    const bad = await post(rt2, { body: '{"watched":{"Namespace":"a"}}' });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /watched\.Name/);
    assert.equal((await post(rt2, { body: 'not json' })).status, 400);
    const big = Buffer.alloc(17 * 1024, 0x20);
    assert.equal((await post(rt2, { body: big })).status, 413, 'declared length');
    // Chunked: no content-length, so the size is only known while streaming.
    const chunked = await new Promise<Reply>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: l.port,
          path: WATCH_EVENT_PATH,
          method: 'POST',
          ca: ca.certPem,
          cert: rt2.certPem,
          key: rt2.keyPem,
          agent: false,
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            resolve({ status: res.statusCode ?? 0, body: '', headers: res.headers });
          });
        },
      );
      req.on('error', reject);
      for (let i = 0; i < 20; i++) req.write(Buffer.alloc(1024, 0x20));
      req.end();
    });
    assert.equal(chunked.status, 413, 'streamed size');
  });

  test('one runtime flooding gets 429 with Retry-After, each held a moment, while another runtime is unaffected', async () => {
    const flood = await startListener(ca, serving, { rateLimit: { perSecond: 5, burst: 5 } });
    const agent1 = new Agent({ keepAlive: true, maxSockets: 8 });
    const agent2 = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const send = (client: IssuedCertificate, agent: Agent) =>
        call({
          port: flood.port,
          client,
          serverCaPem: ca.certPem,
          agent,
          body: encodeWatchEvent(event('x')),
        });
      const floodStart = performance.now();
      const flooding = Promise.all(Array.from({ length: 200 }, () => send(rt1, agent1)));
      const quiet: Reply[] = [];
      for (let i = 0; i < 5; i++) quiet.push(await send(rt2, agent2));
      const flooded = await flooding;
      const floodSeconds = (performance.now() - floodStart) / 1000;
      assert.deepEqual(
        quiet.map((r) => r.status),
        [202, 202, 202, 202, 202],
      );
      const throttled = flooded.filter((r) => r.status === 429);
      // The bucket's bound (burst 5, then 5 a second) whatever the machine's speed; refusals are
      // held 200 ms each, so the flood lasts seconds and most of it is still refused.
      const accepted = flooded.length - throttled.length;
      assert.ok(
        accepted <= 5 + Math.ceil(5 * floodSeconds) + 1,
        `${accepted} accepted in ${floodSeconds.toFixed(1)} s`,
      );
      assert.ok(throttled.length >= 100, `${throttled.length} of 200 throttled`);
      assert.ok(throttled.every((r) => Number(r.headers['retry-after']) >= 1));
      assert.equal(
        flooded.length - throttled.length,
        flood.received.filter((r) => r.runtimeId === 'rt-1').length,
      );
      assert.ok(flooded.every((r) => r.status === 202 || r.status === 429));
      // A refusal is held for one token's refill time, so a connection cannot ask again at once.
      const single = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        let refused: { status: number; ms: number } | undefined;
        for (let i = 0; i < 20 && refused === undefined; i++) {
          const t0 = performance.now();
          const r = await send(rt1, single);
          if (r.status === 429) refused = { status: r.status, ms: performance.now() - t0 };
        }
        assert.ok(refused, 'a 429 within 20 requests of a flooded runtime');
        assert.ok(
          refused.ms >= refusalHoldMs(5) - 1,
          `the 429 came after ${refused.ms.toFixed(0)} ms, not held for ${refusalHoldMs(5)} ms`,
        );
      } finally {
        single.destroy();
      }
    } finally {
      agent1.destroy();
      agent2.destroy();
      await flood.listener.close();
    }
  });

  test('trust rotation: old and new CA during the overlap, then only the new one', async () => {
    const rotated = await startListener(ca, serving);
    const newCaPair = await newCa('drift-ca-2');
    const rt1New = await runtimeClientCert(newCaPair, 'rt-1', 'rt-1.kyma.example');
    // A keep-alive agent caches connections and TLS sessions: neither may outlive the trust.
    const oldAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    const send = (client: IssuedCertificate, agent?: Agent) =>
      call({
        port: rotated.port,
        client,
        serverCaPem: ca.certPem,
        agent,
        body: encodeWatchEvent(event('x')),
      });
    try {
      assert.equal((await send(rt1, oldAgent)).status, 202);
      await assert.rejects(send(rt1New), 'the new CA is not trusted yet');
      rotated.listener.setTrustedCas([ca.certPem, newCaPair.certPem]);
      assert.equal((await send(rt1, oldAgent)).status, 202);
      assert.equal((await send(rt1New)).status, 202);
      rotated.listener.setTrustedCas([newCaPair.certPem]);
      const rejected = (reason: string) =>
        metricValue(rotated.registry, 'rtb_drift_listener_rejected_verifications_total', { reason });
      await assert.rejects(send(rt1, oldAgent), 'the old CA is refused on a connection opened before');
      assert.equal(await rejected('untrusted_ca'), 1, 'refused by the re-check of the open connection');
      // The agent now opens a new connection and offers its cached TLS session.
      await assert.rejects(send(rt1, oldAgent), 'a resumed session does not skip the new check');
      await assert.rejects(send(rt1), 'and a fresh connection is refused in the handshake');
      assert.equal(await rejected('untrusted_ca'), 1);
      assert.equal((await send(rt1New)).status, 202);
      assert.throws(() => {
        rotated.listener.setTrustedCas([]);
      });
      assert.throws(() => {
        rotated.listener.setTrustedCas(['not a certificate']);
      });
      assert.equal((await send(rt1New)).status, 202, 'a refused change leaves the trust as it was');
    } finally {
      oldAgent.destroy();
      await rotated.listener.close();
    }
  });

  test('a new connection resumes the previous TLS session and keeps its identity', async () => {
    // As an attestor does minutes apart: no keep-alive, only the session is kept.
    const agent = new Agent({ keepAlive: false, cert: rt1.certPem, key: rt1.keyPem, ca: ca.certPem });
    const once = () =>
      new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port: l.port, path: WATCH_EVENT_PATH, method: 'POST', agent },
          (res) => {
            res.resume();
            res.on('end', () => {
              resolve({ status: res.statusCode ?? 0, reused: (res.socket as TLSSocket).isSessionReused() });
            });
          },
        );
        req.on('error', reject);
        req.end(encodeWatchEvent(event('resumed')));
      });
    try {
      const count = l.received.length;
      const first = await once();
      // The ticket comes after the handshake; give it a moment to reach the agent.
      await new Promise((r) => setTimeout(r, 50));
      const second = await once();
      assert.deepEqual(first, { status: 202, reused: false });
      assert.deepEqual(second, { status: 202, reused: true });
      assert.deepEqual(
        l.received.slice(count).map((r) => r.runtimeId),
        ['rt-1', 'rt-1'],
      );
    } finally {
      agent.destroy();
    }
  });

  test('the serving certificate is replaced for new connections', async () => {
    const renewed = await loopbackServingCert(ca);
    const serialSeen = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: l.port,
            path: WATCH_EVENT_PATH,
            method: 'GET',
            ca: ca.certPem,
            cert: rt1.certPem,
            key: rt1.keyPem,
            agent: false,
          },
          (res) => {
            resolve((res.socket as TLSSocket).getPeerCertificate().serialNumber);
            res.resume();
          },
        );
        req.on('error', reject);
        req.end();
      });
    const norm = (s: string) => s.toUpperCase().replace(/^0+/, '');
    assert.equal(norm(await serialSeen()), norm(serving.certificate.serialNumber));
    l.listener.setServingCertificate({ certPem: renewed.certPem, keyPem: renewed.keyPem });
    assert.equal(norm(await serialSeen()), norm(renewed.certificate.serialNumber));
    assert.throws(() => {
      l.listener.setServingCertificate({ certPem: renewed.certPem, keyPem: serving.keyPem });
    });
    assert.equal(
      norm(await serialSeen()),
      norm(renewed.certificate.serialNumber),
      'a mismatched pair is refused',
    );
  });

  test('refusals are logged with the runtime ID and reason, never with key material', () => {
    const text = logLines.join('');
    assert.ok(
      logLines.some(
        (line) => line.includes('"reason":"san_mismatch"') && line.includes('"runtimeId":"rt-1"'),
      ),
    );
    assert.ok(logLines.some((line) => line.includes('TLS handshake failed')));
    for (const pem of [serving.keyPem, rt1.keyPem, rt2.keyPem])
      assert.ok(!text.includes(pem.split('\n')[1]!));
    assert.ok(!text.includes('PRIVATE KEY'));
  });
});

describe('the drift listener under a flood of refused certificates', () => {
  test('a few refusal lines per interval, then one line counting the rest; every request is still 403', async () => {
    const ca = await newCa('flood-ca');
    const serving = await loopbackServingCert(ca);
    const unknown = await runtimeClientCert(ca, 'rt-9', 'rt-9.kyma.example');
    const logs = captureLogs();
    // One long interval: the count must not depend on how fast this machine sends.
    const l = await startListener(ca, serving, {
      logger: logs.logger,
      logRateLimit: { perInterval: 5, intervalMs: 600_000 },
    });
    try {
      const agent = new Agent({ keepAlive: true, maxSockets: 4 });
      const replies = await Promise.all(
        Array.from({ length: 40 }, () =>
          call({
            port: l.port,
            client: unknown,
            serverCaPem: ca.certPem,
            body: encodeWatchEvent(event('x')),
            agent,
          }),
        ),
      );
      agent.destroy();
      assert.ok(replies.every((r) => r.status === 403));
      assert.equal(
        await metricValue(l.registry, 'rtb_drift_listener_rejected_verifications_total', {
          reason: 'unknown_runtime',
        }),
        40,
        'every refusal is counted',
      );
      const refused = logs.lines().filter((x) => x.msg === 'drift listener: client certificate refused');
      assert.equal(refused.length, 5);
    } finally {
      await l.listener.close();
    }
    const summary = logs.lines().filter((x) => x.suppressed !== undefined);
    assert.equal(summary.length, 1, 'the count is written when the listener closes');
    assert.equal(summary[0]!.suppressed, 35);
  });
});

describe('the drift forwarder against the listener', () => {
  let ca: CertificateAuthority;
  let serving: IssuedCertificate;
  let dir: string;

  before(async () => {
    ca = await newCa('drift-e2e-ca');
    serving = await loopbackServingCert(ca);
    dir = await mkdtemp(join(tmpdir(), 'rtb-drift-e2e-'));
  });

  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('events arrive, also when the listener starts late, and survive a client certificate renewal', async () => {
    const files = await writeClientFiles(
      dir,
      await runtimeClientCert(ca, 'rt-1', 'rt-1.kyma.example'),
      ca.certPem,
    );
    const port = await freePort();
    const registry = new Registry();
    const forwarder = new DriftForwarder({
      url: `https://127.0.0.1:${port}`,
      tls: files,
      logger: silentLogger(),
      registry,
      backoff: { baseMs: 20, maxMs: 200 },
      maxAttempts: 1000,
    });
    /** Waits until the forwarder counts `n` attempts failed on the network (`what` they are). */
    const networkErrors = (n: number, what: string): Promise<void> =>
      waitFor(
        async () =>
          (await metricValue(registry, 'rtb_drift_forwarder_sends_total', { result: 'network_error' })) >= n,
        what,
      );
    let l: Awaited<ReturnType<typeof startListener>> | undefined;
    try {
      // The listener is down: the events wait and are retried.
      forwarder.send(event('a'));
      forwarder.send(event('b'));
      await networkErrors(2, 'failed attempts while the listener is down');
      l = await startListener(ca, serving, { port });
      await forwarder.flush(20_000);
      assert.deepEqual(
        l.received.map((r) => [r.runtimeId, r.event.watched.Name]),
        [
          ['rt-1', 'a'],
          ['rt-1', 'b'],
        ],
      );

      // The KCP moves to a new CA: our old certificate is refused, events queue up and are retried ...
      const newCaPair = await newCa('drift-e2e-ca-2');
      l.listener.setTrustedCas([newCaPair.certPem]);
      forwarder.send(event('c'));
      forwarder.send(event('d'));
      await networkErrors(4, 'refused attempts under the new trust');
      assert.equal(l.received.length, 2);
      // ... until the renewed certificate lands in the files; new connections use it, nothing is lost.
      await writeClientFiles(
        dir,
        await runtimeClientCert(newCaPair, 'rt-1', 'rt-1.kyma.example'),
        ca.certPem,
      );
      await forwarder.flush(20_000);
      assert.deepEqual(
        l.received.map((r) => r.event.watched.Name),
        ['a', 'b', 'c', 'd'],
      );
      assert.equal(
        await metricValue(registry, 'rtb_drift_forwarder_dropped_total', { reason: 'max_attempts' }),
        0,
      );
      assert.ok(
        (await metricValue(registry, 'rtb_drift_forwarder_tls_reloads_total', { result: 'success' })) >= 2,
      );
    } finally {
      await forwarder.stop();
      await l?.listener.close();
    }
  });
});
