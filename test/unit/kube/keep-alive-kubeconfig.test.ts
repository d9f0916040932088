import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { VersionApi } from '@kubernetes/client-node';
import { KeepAliveAgents } from '../../../src/kube/keep-alive-agents.js';
import { KeepAliveKubeConfig } from '../../../src/kube/keep-alive-kubeconfig.js';
import { kubeRequest } from '../../../src/kube/kube-request.js';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../src/pki/issue-certificate.js';

/**
 * A unit test of the connection handling only: a loopback TLS server that counts the TLS
 * connections it accepts and answers /version. (What the API server does with the requests is
 * covered by the direct-mode integration tests, which run through the same client.)
 */
let server: https.Server;
let url = '';
let caPem = '';
let connections = 0;

function kubeconfig(
  user: { token: string } | { clientCert: string; clientKey: string },
): KeepAliveKubeConfig {
  const kc = new KeepAliveKubeConfig();
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

const versionBody = JSON.stringify({ major: '1', minor: '34', gitVersion: 'v1.34.4' });

void describe('KeepAliveKubeConfig', () => {
  before(async () => {
    const ca = await createCertificateAuthority({ commonName: 'test-ca' });
    caPem = ca.certPem;
    const serving = await issueCertificate(ca, {
      commonName: '127.0.0.1',
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    server = https.createServer(
      { cert: serving.certPem, key: serving.keyPem, ca: caPem, requestCert: true, rejectUnauthorized: false },
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(versionBody);
      },
    );
    server.on('secureConnection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) =>
      server.close(() => {
        r();
      }),
    );
  });

  void test('generated APIs and raw requests share one connection', async () => {
    const kc = kubeconfig({ token: 'secret' });
    const before = connections;
    const api = kc.makeApiClient(VersionApi);
    for (let i = 0; i < 5; i++) assert.equal((await api.getCode()).gitVersion, 'v1.34.4');
    for (let i = 0; i < 5; i++) {
      const v = await kubeRequest<{ gitVersion: string }>(kc, { method: 'GET', path: '/version' });
      assert.equal(v.gitVersion, 'v1.34.4');
    }
    assert.equal(connections - before, 1);
    kc.close();
  });

  void test('a plain KubeConfig would open a connection per request (the reason for this class)', async () => {
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: url, caData: Buffer.from(caPem).toString('base64') }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const before = connections;
    const api = kc.makeApiClient(VersionApi);
    for (let i = 0; i < 3; i++) await api.getCode();
    assert.equal(connections - before, 3);
  });

  void test('a different client identity gets its own connection; close() ends the idle ones', async () => {
    const ca = await createCertificateAuthority({ commonName: 'client-ca' });
    const one = await issueCertificate(ca, { commonName: 'one', usage: 'client' });
    const two = await issueCertificate(ca, { commonName: 'two', usage: 'client' });
    const a = kubeconfig({ clientCert: one.certPem, clientKey: one.keyPem });
    const b = kubeconfig({ clientCert: two.certPem, clientKey: two.keyPem });
    const before = connections;
    await a.makeApiClient(VersionApi).getCode();
    await b.makeApiClient(VersionApi).getCode();
    await a.makeApiClient(VersionApi).getCode();
    assert.equal(connections - before, 2);
    a.close();
    b.close();
    // After close, a new request needs a new connection.
    await a.makeApiClient(VersionApi).getCode();
    assert.equal(connections - before, 3);
    a.close();
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

  test('one keep-alive agent per TLS identity, bounded', () => {
    const agents = new KeepAliveAgents(2, 10);
    const a1 = agents.replace(new https.Agent({ cert: 'A', key: 'a' }));
    const a2 = agents.replace(new https.Agent({ cert: 'A', key: 'a' }));
    assert.equal(a1, a2);
    assert.ok(a1 instanceof https.Agent);
    assert.equal(a1.options.keepAlive, true);
    const b = agents.replace(new https.Agent({ cert: 'B', key: 'b' }));
    assert.notEqual(b, a1);
    agents.replace(new https.Agent({ cert: 'C', key: 'c' }));
    assert.equal(agents.size, 2);
    // A was the oldest: it was retired and is made anew.
    assert.notEqual(agents.replace(new https.Agent({ cert: 'A', key: 'a' })), a1);
    agents.retireAll();
    assert.equal(agents.size, 0);
  });
});
