import { MUTATE_PATH, MUTATE_PATH_UPSTREAM, VALIDATE_PATH } from '../api/runtime-names.js';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server as TlsServer, type SecureContextOptions } from 'node:tls';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { AdmissionContext } from './admission-handler.js';
import { AdmissionEndpoint } from './admission-endpoint.js';
import { ConnectionTracker } from './connection-tracker.js';
import { GateRefusal, RequestGate, type AdmittedBody, type GateLimits } from './request-gate.js';
import {
  BODY_LIMIT_BYTES,
  BODY_TIMEOUT_MS,
  CONNECTIONS_CHECK_MS,
  DECODE_BUDGET_BYTES,
  DRAIN_TIMEOUT_SECONDS,
  HANDSHAKE_TIMEOUT_MS,
  HEADERS_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
  MAX_REQUESTS_IN_FLIGHT,
  MAX_WAITING_REQUESTS,
  QUEUE_TIMEOUT_MS,
  READ_BUDGET_BYTES,
  REQUEST_TIMEOUT_MS,
  WRITE_TIMEOUT_MS,
} from '../api/serving-limits.js';
import type { AdmissionResult } from './webhook-metrics.js';
import { DEFAULT_TLS_MIN_VERSION, type TlsMinVersion } from '../api/tls-min-version.js';

/** A certificate that is read when the server listens, and replaced later. */
export interface ChangingCertificate {
  current(): SecureContextOptions;
  follow(apply: (tls: SecureContextOptions) => void): void;
}

/** Settings of the HTTPS server. */
export interface WebhookServerOptions {
  /**
   * The certificate: fixed, or one that changes (read when the server listens, then followed;
   * ./serving-certificate.ts).
   */
  readonly tls: SecureContextOptions | ChangingCertificate;
  readonly host?: string;
  readonly port?: number;
  /** The oldest TLS version accepted (default {@link DEFAULT_TLS_MIN_VERSION}). */
  readonly minVersion?: TlsMinVersion;
  readonly context: AdmissionContext;
  /** Served at `/metrics` here when set; the process serves it on a port of its own instead (`--metrics-port`). */
  readonly registry?: Registry;
  /** Ready to serve: configuration loaded and caches synced. */
  readonly ready: () => boolean;
  readonly logger: Logger;
  /** What request bodies may take (defaults in ../api/serving-limits.ts). */
  readonly limits?: Partial<GateLimits>;
  /** The drift webhook's handler, served at {@link VALIDATE_PATH} when set. */
  readonly validate?: (body: Buffer) => { status: number; body: string };
}

/** How the server stops (see {@link WebhookServer.close}). */
export interface DrainOptions {
  /** Keep serving this long first, so the Pod leaves the Service's endpoints (default 0). */
  readonly delayMs?: number;
  /** Then give requests in flight this long before closing every connection. */
  readonly timeoutMs?: number;
}

type Headers = Readonly<Record<string, string>>;

/**
 * The admission HTTPS server: `/mutate`, `/healthz`, `/readyz`, `/metrics`. TLS 1.3 (1.2 when
 * told), HTTP/1.1 only; the certificate is replaceable at run time. What request bodies may take is bounded by the
 * gate (./request-gate.ts); every phase of a connection has a timeout; the stop drains as
 * Kubernetes expects (see {@link WebhookServer.close}).
 */
export class WebhookServer {
  private readonly server: Server;
  private readonly gate: RequestGate;
  private readonly connections: ConnectionTracker;
  private readonly endpoint: AdmissionEndpoint;
  private readonly minVersion: TlsMinVersion;
  private draining = false;

  constructor(private readonly options: WebhookServerOptions) {
    this.gate = new RequestGate({
      bodyLimitBytes: BODY_LIMIT_BYTES,
      readBudgetBytes: READ_BUDGET_BYTES,
      maxRequests: MAX_REQUESTS_IN_FLIGHT,
      decodeBudgetBytes: DECODE_BUDGET_BYTES,
      maxWaiting: MAX_WAITING_REQUESTS,
      queueTimeoutMs: QUEUE_TIMEOUT_MS,
      bodyTimeoutMs: BODY_TIMEOUT_MS,
      ...options.limits,
    });
    this.endpoint = new AdmissionEndpoint(options.context);
    this.minVersion = options.minVersion ?? DEFAULT_TLS_MIN_VERSION;
    // node:https speaks HTTP/1.1 only and offers no ALPN, so HTTP/2 stays off (docs/webhook-hardening.md).
    this.server = createServer(
      {
        ...(isChanging(options.tls) ? {} : options.tls),
        minVersion: this.minVersion,
        handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
        keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
        headersTimeout: HEADERS_TIMEOUT_MS,
        requestTimeout: REQUEST_TIMEOUT_MS,
        connectionsCheckingInterval: CONNECTIONS_CHECK_MS,
      },
      (req, res) => {
        this.onRequest(req, res);
      },
    );
    this.connections = new ConnectionTracker(this.server);
    this.server.on('tlsClientError', (error) => {
      options.logger.debug({ err: error }, 'TLS handshake failed');
    });
  }

  /** Starts listening; resolves with the bound port, rejects when the address is unusable. */
  async listen(): Promise<number> {
    const tls = this.options.tls;
    if (isChanging(tls)) {
      this.setSecureContext(tls.current());
      tls.follow((next) => {
        this.setSecureContext(next);
      });
    }
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port ?? 9443, this.options.host ?? '0.0.0.0', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    // Later errors (accept failures) are logged; the server keeps serving.
    this.server.on('error', (error) => {
      this.options.logger.error({ err: error }, 'webhook server error');
    });
    return this.port;
  }

  /** The bound port. */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Whether new connections are accepted. */
  get listening(): boolean {
    return this.server.listening;
  }

  /** Requests in flight and waiting, bytes held (for tests and benchmarks). */
  get load(): RequestGate['state'] & { connections: number } {
    return { ...this.gate.state, connections: this.connections.size };
  }

  /** Replaces the serving certificate for new connections. */
  setSecureContext(tls: SecureContextOptions): void {
    // setSecureContext resets every option not passed again: keep the TLS floor.
    this.server.setSecureContext({ ...tls, minVersion: this.minVersion });
  }

  /**
   * Stops as Kubernetes expects. Readiness fails at once and every answer carries
   * `Connection: close`, so clients leave their connections; for `delayMs` everything else goes
   * on, new connections included, while the Pod leaves the Service's endpoints. Then no new
   * connection is accepted, connections are closed as they become idle, and requests in flight
   * are answered; after `timeoutMs` what is left is closed. A server that is not listening
   * (never was, or is closed already) returns at once.
   */
  async close(options: DrainOptions = {}): Promise<void> {
    this.draining = true;
    if (!this.server.listening) return;
    const delayMs = options.delayMs ?? 0;
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    // Not https.Server#close: that also closes every connection without a request at once,
    // new ones included, racing clients that are writing one. The tracker closes them instead.
    const stopped = new Promise<void>((resolve) => {
      TlsServer.prototype.close.call(this.server, () => {
        resolve();
      });
    });
    const timeoutMs = options.timeoutMs ?? DRAIN_TIMEOUT_SECONDS * 1000;
    const cut = await this.connections.drain(Date.now() + timeoutMs);
    // Requests on these may have been cut: worth a line when a rollout saw admission errors.
    if (cut > 0)
      this.options.logger.warn({ connections: cut, timeoutMs }, 'drain timed out; connections closed');
    this.server.closeAllConnections();
    await stopped;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    this.connections.track(req, res);
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const post = (handle: (body: Buffer) => Promise<Answer> | Answer, admission: boolean): void => {
      if (req.method !== 'POST') this.reply(res, 405, 'only POST is allowed', { allow: 'POST' });
      else void this.serve(req, res, handle, admission);
    };
    if (path === MUTATE_PATH || path === MUTATE_PATH_UPSTREAM) {
      post((body) => this.endpoint.answer(body), true);
      return;
    }
    const validate = this.options.validate;
    if (path === VALIDATE_PATH && validate) {
      post(validate, false);
      return;
    }
    const get = GET_PATHS.has(path);
    if (!get) {
      this.reply(res, 404, 'not found');
      return;
    }
    if (req.method !== 'GET') {
      this.reply(res, 405, 'only GET is allowed', { allow: 'GET' });
      return;
    }
    if (path === '/healthz') {
      this.reply(res, 200, 'ok');
      return;
    }
    if (path === '/readyz') {
      const ok = !this.draining && this.options.ready();
      this.reply(res, ok ? 200 : 503, ok ? 'ok' : 'not ready');
      return;
    }
    const registry = this.options.registry;
    if (path === '/metrics' && registry) {
      void registry.metrics().then(
        (text) => {
          this.reply(res, 200, text, { 'content-type': registry.contentType });
        },
        (error: unknown) => {
          this.options.logger.error({ err: error }, 'cannot render metrics');
          this.reply(res, 500, 'metrics unavailable');
        },
      );
      return;
    }
    this.reply(res, 404, 'not found');
  }

  /**
   * Runs one POST to completion through the gate. Never rejects: a failure the handler did not
   * answer itself is answered 500 and logged, not left to crash the process as an unhandled
   * rejection.
   */
  private async serve(
    req: IncomingMessage,
    res: ServerResponse,
    handle: (body: Buffer) => Promise<Answer> | Answer,
    admission: boolean,
  ): Promise<void> {
    const started = admission ? process.hrtime.bigint() : 0n;
    const count = (result: AdmissionResult): void => {
      if (!admission) return;
      const { metrics } = this.options.context;
      metrics.requests.inc({ result });
      metrics.duration.observe({ result }, Number(process.hrtime.bigint() - started) / 1e9);
    };
    let admitted: AdmittedBody;
    try {
      admitted = await this.gate.admit(req);
    } catch (error) {
      this.refuse(res, error, count);
      return;
    }
    // The room is given back once the request is decided and its answer has left (or the
    // connection is gone), whichever is later: an answer a client does not read still counts,
    // and so does a request whose client went away while it is being decided.
    let pending = 2;
    const settle = (): void => {
      if (--pending === 0) admitted.release();
    };
    res.once('close', settle);
    try {
      const answer = await handle(admitted.body);
      if (answer.result !== undefined) count(answer.result);
      this.reply(res, answer.status, answer.body, answer.status === 200 ? JSON_TYPE : {});
    } catch (error) {
      this.options.logger.error({ err: error }, 'request failed');
      this.reply(res, 500, 'internal error');
    } finally {
      settle();
    }
  }

  private refuse(res: ServerResponse, error: unknown, count: (result: AdmissionResult) => void): void {
    const metrics = this.options.context.metrics;
    if (!(error instanceof GateRefusal)) {
      count('bad_request');
      this.reply(res, 400, 'unreadable body');
      return;
    }
    metrics.refused.inc({ reason: error.reason });
    if (error.status === 0) return;
    if (error.status === 413) count('bad_request');
    // No Retry-After on a 503: client-go would retry until the API server's timeout. The body was
    // left unread or cut: closing is cheaper than reading it to keep the connection.
    this.reply(res, error.status, error.message, error.closeConnection ? { connection: 'close' } : {});
  }

  private reply(res: ServerResponse, status: number, body: string | Buffer, headers: Headers = {}): void {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, {
      'content-type': 'text/plain; charset=utf-8',
      ...headers,
      ...(this.draining ? { connection: 'close' } : {}),
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
    // A client that does not read its answer holds it in our memory: not for long. (A small
    // answer leaves at once for the kernel's socket buffers, whoever reads it.)
    if (res.writableLength > LARGE_ANSWER_BYTES) {
      const timer = setTimeout(() => res.destroy(), WRITE_TIMEOUT_MS);
      timer.unref();
      res.once('close', () => {
        clearTimeout(timer);
      });
    }
  }
}

/** What a POST handler answers: the admission endpoint's answer, or the drift handler's. */
type Answer = { readonly status: number; readonly body: string | Buffer } & {
  readonly result?: AdmissionResult;
};

const LARGE_ANSWER_BYTES = 64 * 1024;

const GET_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

const JSON_TYPE = { 'content-type': 'application/json' } as const;

function isChanging(tls: SecureContextOptions | ChangingCertificate): tls is ChangingCertificate {
  return typeof (tls as Partial<ChangingCertificate>).current === 'function';
}
