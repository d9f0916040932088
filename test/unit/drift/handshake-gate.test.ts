import assert from 'node:assert/strict';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, createServer, type TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { eventually } from '../../../src/envtest/eventually.js';
import { createHandshakeMetrics, gateHandshakes } from '../../../src/drift/handshake-gate.js';
import { loopbackServingCert, newCa } from './tls-fixtures.js';

/** A TLS server behind the gate; `close` ends it. */
async function gatedServer(maxPending: number, timeoutMs: number) {
  const ca = await newCa('gate-test');
  const cert = await loopbackServingCert(ca);
  const registry = new Registry();
  const server = createServer({ cert: cert.certPem, key: cert.keyPem });
  server.on('secureConnection', (s: TLSSocket) => {
    s.on('data', (d: Buffer) => s.write(d));
  });
  server.on('tlsClientError', () => undefined);
  gateHandshakes(server, { maxPending, timeoutMs, metrics: createHandshakeMetrics(registry) });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const metric = async (name: string, reason?: string): Promise<number> => {
    const m = await registry.getSingleMetric(name)?.get();
    return m?.values.find((v) => reason === undefined || v.labels.reason === reason)?.value ?? 0;
  };
  return { server, port, caPem: ca.certPem, metric };
}

/** Idle TCP connections (no byte sent); each records whether the server closed it. */
async function idle(port: number, n: number): Promise<{ sockets: Socket[]; closed: () => number }> {
  let closed = 0;
  const sockets = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((resolve) => {
          const s = netConnect(port, '127.0.0.1', () => {
            resolve(s);
          });
          s.on('error', () => undefined);
          s.on('close', () => closed++);
        }),
    ),
  );
  return { sockets, closed: () => closed };
}

describe('the handshake gate', () => {
  let g: Awaited<ReturnType<typeof gatedServer>>;
  const open: Socket[] = [];
  before(async () => {
    g = await gatedServer(4, 1_500);
  });
  after(async () => {
    for (const s of open) s.destroy();
    await new Promise((r) => g.server.close(r));
  });

  test('past the bound the oldest unfinished handshakes are closed at once; a finished one is not counted', async () => {
    // A TLS connection that finished its handshake first: the oldest connection, but no longer pending.
    const secured = await new Promise<TLSSocket>((resolve, reject) => {
      const s = tlsConnect({ port: g.port, host: '127.0.0.1', ca: g.caPem }, () => {
        resolve(s);
      });
      s.on('error', reject);
    });
    open.push(secured);
    const held = await idle(g.port, 10);
    open.push(...held.sockets);
    await eventually(() => (held.closed() === 6 ? true : undefined), 5_000, 'six idle connections closed');
    assert.equal(await g.metric('rtb_drift_listener_handshakes_refused_total', 'limit'), 6);
    assert.equal(await g.metric('rtb_drift_listener_handshakes_in_flight'), 4);
    // The closed ones were the oldest: the last four are still open.
    assert.deepEqual(
      held.sockets.map((s) => s.destroyed),
      [true, true, true, true, true, true, false, false, false, false],
    );
    const echoed = await new Promise<string>((resolve) => {
      secured.once('data', (d: Buffer) => {
        resolve(d.toString());
      });
      secured.write('still here');
    });
    assert.equal(echoed, 'still here');

    // The four left time out; the finished connection outlives the handshake timeout.
    await eventually(() => (held.closed() === 10 ? true : undefined), 10_000, 'the rest timed out');
    assert.equal(await g.metric('rtb_drift_listener_handshakes_refused_total', 'timeout'), 4);
    assert.equal(await g.metric('rtb_drift_listener_handshakes_in_flight'), 0);
    assert.equal(secured.destroyed, false);
  });

  test('a slow handshake (a ClientHello a byte at a time) is closed at the timeout', async () => {
    const [slow] = (await idle(g.port, 1)).sockets;
    assert.ok(slow);
    open.push(slow);
    const started = Date.now();
    // A TLS record header announcing 512 bytes of handshake, then its bytes one by one.
    slow.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00]));
    const drip = setInterval(() => slow.write(Buffer.from([0x01])), 100);
    await new Promise((r) => slow.once('close', r));
    clearInterval(drip);
    const tookMs = Date.now() - started;
    assert.ok(tookMs >= 1_000 && tookMs < 6_000, `closed after ${tookMs} ms`);
  });
});
