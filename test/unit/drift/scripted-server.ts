import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { mkdtemp, rm } from 'node:fs/promises';
import { after, before } from 'node:test';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CertificateAuthority } from '../../../src/pki/certificate-authority.js';
import type { Registry } from 'prom-client';
import type { ClientTlsFiles } from '../../../src/drift/reloading-tls-agent.js';
import { silentLogger, type Logger } from '../../../src/telemetry/logger.js';
import { loopbackServingCert, newCa, runtimeClientCert, writeClientFiles } from './tls-fixtures.js';

/** One request the server received. */
export interface Seen {
  readonly path: string;
  readonly body: string;
  readonly cn: unknown;
  readonly at: number;
  readonly res: ServerResponse;
}

/** How the server answers a request: status, headers and body (default '.'), or not at all. */
export type ScriptedAnswer = { status: number; headers?: Record<string, string>; body?: string } | 'hold';

/** A loopback mTLS server whose answers the test scripts; `hold` keeps requests unanswered. */
export class ScriptedServer {
  readonly seen: Seen[] = [];
  connections = 0;
  answer: (n: number) => ScriptedAnswer = () => ({ status: 202 });
  private readonly server: Server;

  constructor(ca: CertificateAuthority, serving: { certPem: string; keyPem: string }) {
    this.server = createServer(
      {
        cert: serving.certPem,
        key: serving.keyPem,
        ca: ca.certPem,
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        this.onRequest(req, res);
      },
    );
    this.server.on('secureConnection', () => this.connections++);
  }

  async listen(): Promise<number> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) =>
      this.server.close(() => {
        r();
      }),
    );
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const cn = (req.socket as TLSSocket).getPeerCertificate().subject.CN;
      this.seen.push({
        path: req.url ?? '',
        body: Buffer.concat(chunks).toString(),
        cn,
        at: Date.now(),
        res,
      });
      const a = this.answer(this.seen.length);
      if (a === 'hold') return;
      res.writeHead(a.status, a.headers).end(a.body ?? '.');
    });
  }
}

/** A {@link ScriptedServer} on loopback, and runtime rt-1's client files for it in `dir`. */
export interface ScriptedListener {
  readonly dir: string;
  readonly files: ClientTlsFiles;
  readonly server: ScriptedServer;
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
}

/** Starts a {@link ScriptedListener} with a CA of its own; the caller closes the server and removes `dir`. */
export async function startScriptedListener(name: string): Promise<ScriptedListener> {
  const dir = await mkdtemp(join(tmpdir(), `rtb-${name}-`));
  const ca = await newCa(`${name}-test-ca`);
  const files = await writeClientFiles(dir, await runtimeClientCert(ca, 'rt-1', 'rt-1.example'), ca.certPem);
  const server = new ScriptedServer(ca, await loopbackServingCert(ca));
  return { dir, files, server, url: `https://127.0.0.1:${await server.listen()}` };
}

/** A suite's {@link ScriptedListener}, read once its `before` has run; and the clients to stop with it. */
export interface SuiteListener extends ScriptedListener {
  /** Stops `client` at the end of the suite (or at {@link stopClients}). */
  track(client: () => Promise<void>): void;
  /** Stops every client tracked so far (their requests would reach the next test's script). */
  stopClients(): Promise<void>;
  /** What a client of the listener starts from: its URL, rt-1's files, no logs, metrics in `registry`. */
  clientOptions(registry: Registry): ListenerClientOptions;
}

/** The options every client of the listener is built with. */
export interface ListenerClientOptions {
  readonly url: string;
  readonly tls: ClientTlsFiles;
  readonly logger: Logger;
  readonly registry: Registry;
}

/**
 * Starts a {@link ScriptedListener} before the enclosing suite's tests; after them stops the tracked
 * clients, closes the server and removes its directory.
 */
export function useScriptedListener(name: string): SuiteListener {
  let started: ScriptedListener | undefined;
  const clients: (() => Promise<void>)[] = [];
  const get = (): ScriptedListener => {
    if (!started) throw new Error('the scripted listener is not started (use it inside a test)');
    return started;
  };
  const stopClients = async (): Promise<void> => {
    for (const c of clients.splice(0)) await c();
  };
  before(async () => {
    started = await startScriptedListener(name);
  });
  after(async () => {
    await stopClients();
    await get().server.close();
    await rm(get().dir, { recursive: true, force: true });
  });
  return {
    get dir() {
      return get().dir;
    },
    get files() {
      return get().files;
    },
    get server() {
      return get().server;
    },
    get url() {
      return get().url;
    },
    track: (client) => clients.push(client),
    stopClients,
    clientOptions: (registry) => ({ url: get().url, tls: get().files, logger: silentLogger(), registry }),
  };
}
