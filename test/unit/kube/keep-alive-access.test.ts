import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import tls from 'node:tls';
import { after, before, describe, mock, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeconfigLite, type ClusterAccess } from '../../../src/kube/cluster-access.js';
import { KeepAliveAccess } from '../../../src/kube/keep-alive-access.js';
import { KeepAliveAgents } from '../../../src/kube/keep-alive-agents.js';
import { kubeRequest } from '../../../src/kube/kube-request.js';
import { eventually } from '../../../src/envtest/eventually.js';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../src/pki/issue-certificate.js';
import { closeServer, listenLoopback } from '../../support/server-lifecycle.js';

/**
 * A unit test of the connection handling only: a loopback TLS server that asks for a client
 * certificate, counts the TLS connections it accepts and answers /version with the client's CN
 * and whether the TLS session was resumed.
 * (What the API server does with the requests is covered by the direct-mode integration tests,
 * which run through the same client.)
 */
let server: https.Server;
let url = '';
let caPem = '';
let clientCa: Awaited<ReturnType<typeof createCertificateAuthority>>;
let connections = 0;
let serverOptions: https.ServerOptions = {};

/** The stand-in's answer: the client's CN and whether its TLS session was resumed. */
const answer: http.RequestListener = (req, res) => {
  const socket = req.socket as tls.TLSSocket;
  // Without a client certificate the peer certificate is an empty object.
  const peer: Partial<tls.PeerCertificate> = socket.getPeerCertificate();
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      gitVersion: 'v1.34.4',
      cn: typeof peer.subject?.CN === 'string' ? peer.subject.CN : '',
      resumed: socket.isSessionReused(),
    }),
  );
};

type User = { token: string } | { clientCert: string; clientKey: string };

function clientNode(user: User): KubeConfig {
  const kc = new KubeConfig();
  const u =
    'token' in user
      ? { name: 'u', token: user.token }
      : {
          name: 'u',
          certData: Buffer.from(user.clientCert).toString('base64'),
          keyData: Buffer.from(user.clientKey).toString('base64'),
        };
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: url, caData: Buffer.from(caPem).toString('base64') }],
    users: [u],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

function lite(user: { clientCert: string; clientKey: string }): KubeconfigLite {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  return new KubeconfigLite(
    { server: url, caData: b64(caPem), skipTLSVerify: false },
    { certData: b64(user.clientCert), keyData: b64(user.clientKey) },
  );
}

/** An access as a client certificate of the client CA named `commonName`. */
async function accessAs(commonName: string): Promise<KeepAliveAccess> {
  const user = await issueCertificate(clientCa, { commonName, usage: 'client' });
  return new KeepAliveAccess(lite({ clientCert: user.certPem, clientKey: user.keyPem }));
}

const version = (access: ClusterAccess): Promise<{ gitVersion: string; cn: string; resumed: boolean }> =>
  kubeRequest(access, { method: 'GET', path: '/version' });

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

void describe('KeepAliveAccess', () => {
  before(async () => {
    const ca = await createCertificateAuthority({ commonName: 'test-ca' });
    clientCa = await createCertificateAuthority({ commonName: 'client-ca' });
    caPem = ca.certPem;
    const serving = await issueCertificate(ca, {
      commonName: '127.0.0.1',
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    serverOptions = {
      cert: serving.certPem,
      key: serving.keyPem,
      ca: clientCa.certPem,
      requestCert: true,
      rejectUnauthorized: false,
    };
    server = https.createServer(serverOptions, answer);
    server.on('secureConnection', () => connections++);
    url = `https://127.0.0.1:${await listenLoopback(server)}`;
  });
  after(() => closeServer(server));

  void test('requests share one connection; without it, client-node opens one per request', async () => {
    const kc = new KeepAliveAccess(clientNode({ token: 'secret' }));
    let before = connections;
    for (let i = 0; i < 5; i++) assert.equal((await version(kc)).gitVersion, 'v1.34.4');
    assert.equal(connections - before, 1);
    kc.close();
    before = connections;
    const plain = clientNode({ token: 'secret' });
    for (let i = 0; i < 3; i++) await version(plain);
    assert.equal(connections - before, 3, 'the reason for this class');
  });

  void test('one TLS context per identity: a new connection parses no PEM again', async () => {
    const one = await issueCertificate(clientCa, { commonName: 'one', usage: 'client' });
    const parsed = mock.method(tls, 'createSecureContext');
    try {
      for (const access of [
        new KeepAliveAccess(clientNode({ clientCert: one.certPem, clientKey: one.keyPem })),
        new KeepAliveAccess(lite({ clientCert: one.certPem, clientKey: one.keyPem })),
      ]) {
        parsed.mock.resetCalls();
        const before = connections;
        for (let i = 0; i < 3; i++) {
          assert.equal((await version(access)).cn, 'one');
          // The server drops the idle connection: the next request must connect again. Wait
          // until the client saw it close (a fixed pause lost that race on a loaded machine).
          server.closeIdleConnections();
          await eventually(() => (access.sockets === 0 ? true : undefined), 5_000, 'the connection closed');
        }
        assert.equal(connections - before, 3);
        assert.equal(parsed.mock.callCount(), 1);
        access.close();
      }
    } finally {
      parsed.mock.restore();
    }
  });

  void test('wrapped in another, it keeps its connection and its agent', async () => {
    const inner = new KeepAliveAccess(clientNode({ token: 'secret' }));
    const outer = new KeepAliveAccess(inner);
    const before = connections;
    for (let i = 0; i < 3; i++) await version(outer);
    await version(inner);
    assert.equal(connections - before, 1, "one connection: the inner access's, never destroyed");
    assert.equal(outer.sockets, 0, 'the outer access holds no agent of its own');
    outer.close();
    inner.close();
  });

  void test('a view under other limits uses the same connection and keeps its own limits', async () => {
    const limits = { maxAnswerBytes: 1 << 20, deadlineMs: 5_000 };
    const access = new KeepAliveAccess(clientNode({ token: 'secret' }), {}, { ...limits, deadlineMs: 1_000 });
    const view = access.withLimits(limits);
    const before = connections;
    await version(access);
    await version(view);
    await version(access);
    assert.equal(connections - before, 1);
    assert.equal(view.requestLimits, limits);
    assert.equal(access.requestLimits?.deadlineMs, 1_000);
    access.close();
  });

  void test('the request options carry no PEMs: the agent holds the identity', async () => {
    const access = await accessAs('one');
    const opts: https.RequestOptions = {};
    await access.applyToHTTPSOptions(opts);
    assert.equal(opts.ca, undefined);
    assert.equal(opts.cert, undefined);
    assert.equal(opts.key, undefined);
    const agent = opts.agent as https.Agent & { options: https.AgentOptions };
    assert.ok(agent.options.secureContext);
    assert.equal(agent.options.cert, undefined);
    assert.equal(agent.options.keepAlive, true);
    access.close();
  });

  void test('a rotated client certificate gets its own connection; close() ends the idle ones', async () => {
    const one = await issueCertificate(clientCa, { commonName: 'one', usage: 'client' });
    const two = await issueCertificate(clientCa, { commonName: 'two', usage: 'client' });
    let user = { clientCert: one.certPem, clientKey: one.keyPem };
    // An access whose credentials change (as a rotated certificate file would).
    const rotating: ClusterAccess = {
      getCurrentCluster: () => ({ server: url }),
      applyToHTTPSOptions: (opts) => lite(user).applyToHTTPSOptions(opts),
    };
    const access = new KeepAliveAccess(rotating);
    const before = connections;
    assert.equal((await version(access)).cn, 'one');
    assert.equal((await version(access)).cn, 'one', 'equal bytes in new buffers: the same identity');
    user = { clientCert: two.certPem, clientKey: two.keyPem };
    assert.equal((await version(access)).cn, 'two');
    assert.equal(connections - before, 2);
    access.close();
    assert.equal(access.sockets, 0);
    await version(access);
    assert.equal(connections - before, 3, 'after close, a new request needs a new connection');
    access.close();
  });

  void test('an identity is let go once unused with no connection open; then made anew', async () => {
    const access = await accessAs('one');
    const parsed = mock.method(tls, 'createSecureContext');
    try {
      await version(access);
      assert.equal(access.retireIdle(0), 0, 'its connection is still open');
      server.closeIdleConnections();
      for (let i = 0; i < 100 && access.sockets > 0; i++) await sleep(10);
      assert.equal(access.retireIdle(60_000), 0, 'used within the idle time');
      assert.equal(access.retireIdle(0), 1);
      const again = await version(access);
      assert.equal(again.cn, 'one');
      assert.equal(again.resumed, true, "the identity's session outlives its TLS context");
      assert.equal(parsed.mock.callCount(), 2, 'a new TLS context after it was let go');
    } finally {
      parsed.mock.restore();
      access.close();
    }
  });

  void test("an identity's session is offered to the server it came from only", async () => {
    const access = await accessAs('one');
    const opts: https.RequestOptions = {};
    await access.applyToHTTPSOptions(opts);
    const agent = opts.agent as https.Agent;
    // A second server of the same trust on another port.
    const second = https.createServer(serverOptions, answer);
    const secondPort = await listenLoopback(second);
    const offered = (): (Buffer | undefined)[] =>
      connect.mock.calls.map((c) => (c.arguments[0] as { session?: Buffer }).session);
    const connect = mock.method(tls, 'connect');
    const resumed = (port: number): Promise<boolean> =>
      new Promise((resolve, reject) => {
        const req = https.request({ host: '127.0.0.1', port, path: '/version', agent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            resolve((JSON.parse(Buffer.concat(chunks).toString()) as { resumed: boolean }).resumed);
          });
        });
        req.on('error', reject);
        req.end();
      });
    const closed = async (): Promise<void> => {
      server.closeIdleConnections();
      second.closeIdleConnections();
      await eventually(() => (access.sockets === 0 ? true : undefined), 5_000, 'the connections closed');
    };
    try {
      assert.equal(await resumed(Number(new URL(url).port)), false);
      await closed();
      assert.equal(await resumed(secondPort), false, 'another server');
      assert.equal(offered()[1], undefined, 'offered no session of the first server');
      await closed();
      assert.equal(await resumed(secondPort), true, 'its own session');
      assert.ok(offered()[2]);
      await closed();
      second.once('connection', (socket: Socket) => socket.destroy());
      await assert.rejects(resumed(secondPort));
      assert.ok(offered()[3]);
      assert.equal(
        await resumed(secondPort),
        false,
        'a connection that failed: its session not offered again',
      );
      assert.equal(offered()[4], undefined);
    } finally {
      connect.mock.restore();
      access.close();
      await closeServer(second);
    }
  });

  void test('an idle connection closes after idleSocketMs', async () => {
    // Until the socket connects, the agent's idle timeout is the request's too (Node applies the
    // request's own once connected): shorter than a connect on a busy machine, it failed the call.
    const access = new KeepAliveAccess(clientNode({ token: 't' }), { idleSocketMs: 1_000 });
    const open = (): number => access.sockets;
    await version(access);
    assert.equal(open(), 1);
    for (let i = 0; i < 500 && open() > 0; i++) await sleep(10);
    assert.equal(open(), 0);
    access.close();
  });
});

void describe('KeepAliveAgents', () => {
  test('passes through what is not a plain https agent', () => {
    const agents = new KeepAliveAgents();
    const plain = new http.Agent();
    assert.equal(agents.replace(plain), plain);
    assert.equal(agents.replace(undefined), undefined);
    class ProxyAgent extends https.Agent {}
    const proxy = new ProxyAgent();
    assert.equal(agents.replace(proxy), proxy);
    assert.equal(agents.size, 0);
  });

  test('one keep-alive agent per TLS identity, the least recently used retired beyond the bound', () => {
    const agents = new KeepAliveAgents({ maxAgents: 2, retireAfterMs: 10 });
    const id = (name: string) => ({ ca: Buffer.from(`${name} CA`), servername: name });
    const a1 = agents.agentFor(id('a'));
    assert.equal(agents.agentFor(id('a')), a1, 'equal bytes: the same agent');
    assert.equal(a1.options.keepAlive, true);
    const b = agents.agentFor(id('b'));
    assert.notEqual(b, a1);
    assert.notEqual(agents.agentFor({ ...id('b'), rejectUnauthorized: false }), b);
    assert.equal(agents.size, 2);
    // b (with rejectUnauthorized) and the other b are held: a was the least recently used.
    assert.notEqual(agents.agentFor(id('a')), a1);
    agents.retireAll();
    assert.equal(agents.size, 0);
  });

  test('retireIdle lets go of the identities unused for the idle time', () => {
    let now = 0;
    const agents = new KeepAliveAgents({}, () => now);
    const a = agents.agentFor({ servername: 'a' });
    now = 1_000;
    const b = agents.agentFor({ servername: 'b' });
    now = 1_500;
    assert.equal(agents.retireIdle(1_000), 1);
    assert.equal(agents.size, 1);
    assert.equal(agents.agentFor({ servername: 'b' }), b);
    assert.notEqual(agents.agentFor({ servername: 'a' }), a);
  });
});
