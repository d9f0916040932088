/**
 * A runtime "API server" played by the test: an HTTPS server with a CA of its own behind a
 * kubeconfig, as KIM's kubeconfig Secret would name a real one, that answers every request in a
 * hostile way: `flood` streams 50 MB of JSON as fast as the client reads, `drip` sends the status
 * line and headers at once and then one byte a second, forever. It counts what it sent.
 */
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { renderKubeconfig } from '../../src/envtest/kubeconfig.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';

/** How a hostile runtime answers. */
export type HostileKind = 'flood' | 'drip';

/** A running hostile runtime. */
export interface HostileRuntime {
  /** A kubeconfig reaching it (a client certificate of its CA, never checked). */
  readonly kubeconfig: string;
  /** Requests received so far. */
  requests(): number;
  /** The most bytes sent in answer to one request. */
  maxSentPerRequest(): number;
  /** Requests whose answer is still being sent. */
  open(): number;
  stop(): Promise<void>;
}

/** 50 MB: the size of answer that took the controller to a V8 out-of-memory abort. */
export const FLOOD_BYTES = 50 * 1024 * 1024;
const FLOOD_CHUNK = Buffer.from(`[${'0,'.repeat(32 * 1024)}0],`);

/** Starts a hostile runtime on a free loopback port. */
export async function startHostileRuntime(kind: HostileKind): Promise<HostileRuntime> {
  const ca = await createCertificateAuthority({ commonName: `hostile ${kind} CA` });
  const serving = await issueCertificate(ca, {
    commonName: 'hostile',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const client = await issueCertificate(ca, { commonName: 'rtb-controller', usage: 'client' });
  let requests = 0;
  let maxSent = 0;
  let open = 0;
  const timers = new Set<NodeJS.Timeout>();
  const server = https.createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
    requests++;
    open++;
    let sent = 0;
    const count = (n: number): void => {
      sent += n;
      maxSent = Math.max(maxSent, sent);
    };
    res.on('close', () => open--);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    if (kind === 'drip') {
      const t = setInterval(() => {
        res.write(' ');
        count(1);
      }, 1_000);
      timers.add(t);
      res.on('close', () => {
        clearInterval(t);
        timers.delete(t);
      });
      return;
    }
    res.write('{"kind":"Secret","items":[');
    const more = (): void => {
      while (sent < FLOOD_BYTES && !res.destroyed) {
        count(FLOOD_CHUNK.length);
        if (!res.write(FLOOD_CHUNK)) {
          res.once('drain', more);
          return;
        }
      }
      res.end('[]]}');
    };
    more();
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    kubeconfig: renderKubeconfig({
      name: `hostile-${kind}`,
      server: `https://127.0.0.1:${port}`,
      caPem: ca.certPem,
      clientCertPem: client.certPem,
      clientKeyPem: client.keyPem,
    }),
    requests: () => requests,
    maxSentPerRequest: () => maxSent,
    open: () => open,
    async stop() {
      for (const t of timers) clearInterval(t);
      server.closeAllConnections();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}
