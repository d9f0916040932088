import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

/** Answers a scrape: the registry's text, or 500 when it cannot be rendered. */
export function answerMetrics(registry: Registry, res: ServerResponse, logger: Logger): void {
  registry.metrics().then(
    (text) => {
      if (res.headersSent) return;
      res.writeHead(200, { 'content-type': registry.contentType });
      res.end(text);
    },
    (error: unknown) => {
      logger.warn({ err: error }, 'cannot render metrics');
      if (res.headersSent) return;
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('cannot render metrics\n');
    },
  );
}

/** Settings of {@link MetricsServer}. */
export interface MetricsServerOptions {
  readonly registry: Registry;
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly logger: Logger;
}

/**
 * `/metrics` over plain HTTP on a port of its own, so a NetworkPolicy can open it to scrapers
 * only while the webhook's port stays open to the API server. Nothing else is served there.
 */
export class MetricsServer {
  private readonly server: Server;

  constructor(private readonly o: MetricsServerOptions) {
    this.server = createServer({ headersTimeout: 10_000, requestTimeout: 15_000 }, (req, res) => {
      this.onRequest(req, res);
    });
  }

  /** Starts listening; resolves with the bound port. */
  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.o.port, this.o.host ?? '0.0.0.0', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return (this.server.address() as AddressInfo).port;
  }

  /** Stops listening and closes every connection (a scrape in flight is lost; the next one comes). */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => {
      this.server.close(() => {
        resolve();
      });
    });
    this.server.closeAllConnections();
    await closed;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (status: number, body: string, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
      res.end(body);
    };
    if (path !== '/metrics') reply(404, 'not found\n');
    else if (req.method !== 'GET' && req.method !== 'HEAD') reply(405, 'only GET\n', { allow: 'GET, HEAD' });
    else answerMetrics(this.o.registry, res, this.o.logger);
  }
}
