import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SecureContextOptions } from 'node:tls';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { AdmissionDecodeError, decodeAdmissionReview, encodeAdmissionResponse } from './admission-review.js';
import {
  handleAdmission,
  replayAdmission,
  type AdmissionContext,
  type AdmissionRecord,
} from './admission-handler.js';
import { AdmissionMemo } from './admission-memo.js';
import type { AdmissionResult } from './webhook-metrics.js';
import { BodyTooLargeError, readLimitedBody } from '../watcher/limited-body.js';

/** Settings of the HTTPS server. */
export interface WebhookServerOptions {
  readonly tls: SecureContextOptions;
  readonly host?: string;
  readonly port?: number;
  readonly context: AdmissionContext;
  /** Served at `/metrics` here when set; the process serves it on a port of its own instead (`--metrics-port`). */
  readonly registry?: Registry;
  /** Ready to serve: configuration loaded and caches synced. */
  readonly ready: () => boolean;
  readonly logger: Logger;
  /** Largest accepted body; an AdmissionReview carries up to two Pods (default 4 MiB). */
  readonly bodyLimitBytes?: number;
  /** Answers kept for identical requests (default 512; 0 turns the memo off). */
  readonly memoEntries?: number;
  /** The drift webhook's handler, served at {@link VALIDATE_PATH} when set. */
  readonly validate?: (body: Buffer) => { status: number; body: string };
}

/** The path of the drift (validating) webhook. */
export const VALIDATE_PATH = '/validate';

/** The mutation path the MutatingWebhookConfiguration points at. */
export const MUTATE_PATH = '/mutate';

/** Upstream's mutation path (controller-runtime's `/mutate--v1-pod`), served like MUTATE_PATH. */
export const UPSTREAM_MUTATE_PATH = '/mutate--v1-pod';

/**
 * The admission HTTPS server: `/mutate`, `/healthz`, `/readyz`, `/metrics`. TLS 1.2 or newer;
 * the certificate is replaceable at run time; shutdown drains requests in flight.
 */
export class WebhookServer {
  private readonly server: Server;
  private inFlight = 0;
  private draining = false;
  private drained: (() => void) | undefined;
  private readonly memo: AdmissionMemo<AdmissionRecord> | undefined;

  constructor(private readonly options: WebhookServerOptions) {
    const memoEntries = options.memoEntries ?? 512;
    this.memo = memoEntries > 0 ? new AdmissionMemo(memoEntries) : undefined;
    this.server = createServer(
      {
        ...options.tls,
        minVersion: 'TLSv1.2',
        // The API server keeps connections open for reuse (Go's idle timeout is 90 s); closing
        // ours later than that avoids racing a request on a connection we are closing.
        keepAliveTimeout: 120_000,
        headersTimeout: 10_000,
        requestTimeout: 30_000,
      },
      (req, res) => {
        this.onRequest(req, res);
      },
    );
    this.server.on('tlsClientError', (error) => {
      options.logger.debug({ err: error }, 'TLS handshake failed');
    });
  }

  /** Starts listening; resolves with the bound port. */
  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port ?? 9443, this.options.host ?? '0.0.0.0', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return this.port;
  }

  /** The bound port. */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Replaces the serving certificate for new connections. */
  setSecureContext(tls: SecureContextOptions): void {
    // setSecureContext resets every option not passed again: keep the TLS floor.
    this.server.setSecureContext({ ...tls, minVersion: 'TLSv1.2' });
  }

  /** Stops accepting, answers what is in flight, then closes every connection. */
  async close(timeoutMs = 25_000): Promise<void> {
    this.draining = true;
    const closed = new Promise<void>((resolve) => {
      this.server.close(() => {
        resolve();
      });
    });
    this.server.closeIdleConnections();
    if (this.inFlight > 0) {
      await Promise.race([
        new Promise<void>((resolve) => {
          this.drained = resolve;
        }),
        new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref()),
      ]);
    }
    this.server.closeAllConnections();
    await closed;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    if (path === MUTATE_PATH || path === UPSTREAM_MUTATE_PATH) {
      if (req.method !== 'POST') {
        this.reply(res, 405, 'only POST is allowed', { allow: 'POST' });
        return;
      }
      void this.serve(res, () => this.answerAdmission(req, res));
      return;
    }
    if (path === VALIDATE_PATH && this.options.validate) {
      if (req.method !== 'POST') {
        this.reply(res, 405, 'only POST is allowed', { allow: 'POST' });
        return;
      }
      const validate = this.options.validate;
      void this.serve(res, () => this.observe(req, res, validate));
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
   * Runs one POST to completion, counted as in flight for the drain on shutdown. Never rejects:
   * a failure the handler did not answer itself is answered 500 and logged, not left to crash
   * the process as an unhandled rejection.
   */
  private async serve(res: ServerResponse, handle: () => Promise<void>): Promise<void> {
    this.inFlight++;
    try {
      await handle();
    } catch (error) {
      this.options.logger.error({ err: error }, 'request failed');
      this.reply(res, 500, 'internal error');
    } finally {
      this.inFlight--;
      if (this.inFlight === 0) this.drained?.();
    }
  }

  private async answerAdmission(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { metrics } = this.options.context;
    const started = process.hrtime.bigint();
    const done = (result: AdmissionResult): void => {
      metrics.requests.inc(result);
      metrics.duration.observe(result, Number(process.hrtime.bigint() - started) / 1e9);
    };
    let body: Buffer;
    try {
      body = await readLimitedBody(req, this.options.bodyLimitBytes ?? 4 * 1024 * 1024);
    } catch (error) {
      done('bad_request');
      const tooLarge = error instanceof BodyTooLargeError;
      this.reply(res, tooLarge ? 413 : 400, error instanceof Error ? error.message : 'unreadable body', {
        ...(tooLarge ? { connection: 'close' } : {}),
      });
      return;
    }
    const probe = this.memo?.probe(body);
    const record = probe && this.memo?.get(probe.key);
    if (probe && record) {
      // Reused answers come from caches: no promise turn unless the context needs I/O.
      const replay = replayAdmission(record, probe.uid, this.options.context);
      const replayed = replay instanceof Promise ? await replay : replay;
      metrics.memo.inc(replayed ? 'hit' : 'stale');
      if (replayed) {
        done(replayed.result);
        this.reply(res, 200, replayed.body, JSON_TYPE);
        return;
      }
      this.memo?.delete(probe.key);
    }
    let request;
    try {
      request = decodeAdmissionReview(body);
    } catch (error) {
      done('bad_request');
      const reason = error instanceof AdmissionDecodeError ? error.message : 'malformed AdmissionReview';
      this.reply(res, 400, reason);
      return;
    }
    const handled = await handleAdmission(request, this.options.context);
    done(handled.result);
    if (handled.record) {
      if (
        probe &&
        this.memo?.seenBefore(probe.key) === true &&
        AdmissionMemo.keyable(body, probe, request.uid)
      )
        this.memo.set(probe.key, handled.record);
      this.reply(res, 200, handled.record.respond(request.uid), JSON_TYPE);
      return;
    }
    this.reply(res, 200, encodeAdmissionResponse(handled.answer), JSON_TYPE);
  }

  private async observe(
    req: IncomingMessage,
    res: ServerResponse,
    validate: (body: Buffer) => { status: number; body: string },
  ): Promise<void> {
    let body: Buffer;
    try {
      body = await readLimitedBody(req, this.options.bodyLimitBytes ?? 4 * 1024 * 1024);
    } catch (error) {
      const tooLarge = error instanceof BodyTooLargeError;
      this.reply(res, tooLarge ? 413 : 400, error instanceof Error ? error.message : 'unreadable body');
      return;
    }
    const answer = validate(body);
    this.reply(
      res,
      answer.status,
      answer.body,
      answer.status === 200 ? { 'content-type': 'application/json' } : {},
    );
  }

  private reply(
    res: ServerResponse,
    status: number,
    body: string | Buffer,
    headers: Record<string, string> = {},
  ): void {
    if (res.headersSent) return;
    res.writeHead(status, {
      'content-type': 'text/plain; charset=utf-8',
      ...headers,
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  }
}

const JSON_TYPE = { 'content-type': 'application/json' } as const;
