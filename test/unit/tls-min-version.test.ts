// TLS 1.3 is the floor of every listener of ours and of the drift client; --tls-min-version 1.2
// lets an older peer in (issue 48).
import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { SecureVersion, TLSSocket } from 'node:tls';
import { Registry } from 'prom-client';
import { EventListener } from '../../src/drift/event-listener.js';
import { ReloadingTlsAgent } from '../../src/drift/reloading-tls-agent.js';
import type { TlsMinVersion } from '../../src/api/tls-min-version.js';
import { FlagError, tlsMinVersionOf } from '../../src/cli/flag-values.js';
import type { CertificateAuthority } from '../../src/pki/certificate-authority.js';
import type { IssuedCertificate } from '../../src/pki/issue-certificate.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { startUnitWebhook } from '../support/unit-webhook.js';
import { tlsProtocol } from '../support/tls-protocol.js';
import { loopbackServingCert, newCa, runtimeClientCert, writeClientFiles } from './drift/tls-fixtures.js';

/** The protocol a client speaking only `version` agrees on, or the handshake's error. */
const handshake = (
  port: number,
  version: SecureVersion,
  caPem: string,
  client?: IssuedCertificate,
): Promise<string> => tlsProtocol({ port, ca: caPem, cert: client?.certPem, key: client?.keyPem }, version);

describe('TLS 1.3 by default, 1.2 on request', () => {
  let ca: CertificateAuthority;
  let serving: IssuedCertificate;
  let client: IssuedCertificate;

  before(async () => {
    ca = await newCa('tls-floor-ca');
    [serving, client] = await Promise.all([
      loopbackServingCert(ca),
      runtimeClientCert(ca, 'rt-1', 'rt-1.kyma.example'),
    ]);
  });

  test('--tls-min-version takes 1.3 or 1.2, nothing else', () => {
    assert.equal(tlsMinVersionOf('1.3'), 'TLSv1.3');
    assert.equal(tlsMinVersionOf('1.2'), 'TLSv1.2');
    for (const bad of ['1.1', '1', 'TLSv1.3', '']) assert.throws(() => tlsMinVersionOf(bad), FlagError, bad);
  });

  for (const minVersion of [undefined, 'TLSv1.2'] as const) {
    const accepts12 = minVersion === 'TLSv1.2';
    test(`the webhook server (minVersion ${minVersion ?? 'default'}) ${accepts12 ? 'accepts' : 'refuses'} a TLS 1.2-only client, also after a certificate change`, async () => {
      const webhook = await startUnitWebhook({ minVersion });
      try {
        assert.equal(await handshake(webhook.port, 'TLSv1.3', webhook.caPem), 'TLSv1.3');
        const old = await handshake(webhook.port, 'TLSv1.2', webhook.caPem);
        if (accepts12) assert.equal(old, 'TLSv1.2');
        else assert.match(old, /^refused: .*(protocol version|alert number 70)/);
        // A renewed certificate resets the context's options: the floor must stay.
        webhook.server.setSecureContext({ cert: serving.certPem, key: serving.keyPem });
        const again = await handshake(webhook.port, 'TLSv1.2', ca.certPem);
        assert.equal(again.startsWith('refused'), !accepts12, again);
      } finally {
        await webhook.server.close();
      }
    });

    test(`the drift listener (minVersion ${minVersion ?? 'default'}) ${accepts12 ? 'accepts' : 'refuses'} a TLS 1.2-only client with a valid certificate, also after a change of trust`, async () => {
      const listener = new EventListener({
        tls: { certPem: serving.certPem, keyPem: serving.keyPem },
        trustedCaPems: [ca.certPem],
        host: '127.0.0.1',
        port: 0,
        minVersion,
        lookupRuntime: () => ({ domain: 'rt-1.kyma.example' }),
        onEvent: () => undefined,
        registry: new Registry(),
        logger: silentLogger(),
      });
      const port = await listener.listen();
      try {
        assert.equal(await handshake(port, 'TLSv1.3', ca.certPem, client), 'TLSv1.3');
        const old = await handshake(port, 'TLSv1.2', ca.certPem, client);
        if (accepts12) assert.equal(old, 'TLSv1.2');
        else assert.match(old, /^refused: .*(protocol version|alert number 70)/);
        listener.setTrustedCas([ca.certPem]);
        const again = await handshake(port, 'TLSv1.2', ca.certPem, client);
        assert.equal(again.startsWith('refused'), !accepts12, again);
      } finally {
        await listener.close();
      }
    });
  }

  describe('the drift client', () => {
    let dir: string;
    let server: Server;
    let port: number;

    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'rtb-tls-floor-'));
      // A peer that speaks TLS 1.2 at most.
      server = createServer(
        { cert: serving.certPem, key: serving.keyPem, maxVersion: 'TLSv1.2' },
        (req, res) => {
          res.end((req.socket as TLSSocket).getProtocol() ?? '');
        },
      );
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });

    after(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await rm(dir, { recursive: true, force: true });
    });

    const get = async (minVersion: TlsMinVersion | undefined): Promise<string> => {
      const files = { ...(await writeClientFiles(dir, client, ca.certPem)), minVersion };
      const tls = new ReloadingTlsAgent({
        files,
        checkIntervalMs: 0,
        idleSocketMs: 1_000,
        logger: silentLogger(),
        onReload: () => undefined,
      });
      const agent = await tls.current();
      try {
        return await new Promise<string>((resolve) => {
          const req = request({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => (body += chunk.toString()));
            res.on('end', () => {
              resolve(body);
            });
          });
          req.on('error', (error) => {
            resolve(`refused: ${error.message}`);
          });
          req.end();
        });
      } finally {
        tls.destroy();
      }
    };

    test('offers TLS 1.3 only by default: a 1.2-only listener is refused', async () => {
      assert.match(await get(undefined), /^refused: .*(protocol version|alert number 70|no protocols)/);
    });

    test('with minVersion 1.2 it reaches a 1.2-only listener', async () => {
      assert.equal(await get('TLSv1.2'), 'TLSv1.2');
    });
  });
});
