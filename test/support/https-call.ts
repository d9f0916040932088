/** One HTTPS request to a loopback server, for tests: one copy of the request-and-collect code. */
import type { Agent } from 'node:https';
import { request } from 'node:https';

/** An HTTP answer. */
export interface Reply {
  readonly status: number;
  readonly body: string;
  readonly headers: Record<string, string | string[] | undefined>;
}

/** A request to `127.0.0.1:port`, trusting `caPem` only. */
export interface CallOptions {
  readonly port: number;
  readonly caPem: string;
  readonly path: string;
  /** Default POST. */
  readonly method?: string;
  readonly body?: string | Buffer;
  readonly headers?: Record<string, string | number>;
  /** A client certificate (mutual TLS). */
  readonly client?: { readonly certPem: string; readonly keyPem: string };
  /** Server name to verify (SNI); default the host. */
  readonly servername?: string;
  /** Default: no agent (a new connection). */
  readonly agent?: Agent;
}

/** Sends the request and collects the answer; rejects when the connection fails (e.g. TLS refused). */
export function httpsCall(o: CallOptions): Promise<Reply> {
  const held = heldCall(o, 0);
  held.finish();
  return held.reply;
}

/**
 * Starts the request and sends its body only up to `sentBytes` until `finish` is called: a
 * request that is in flight for as long as the test wants.
 */
export function heldCall(o: CallOptions, sentBytes: number): { finish: () => void; reply: Promise<Reply> } {
  let finish = (): void => undefined;
  const reply = new Promise<Reply>((resolve, reject) => {
    const body = o.body === undefined ? undefined : Buffer.from(o.body);
    const req = request(
      {
        host: '127.0.0.1',
        port: o.port,
        path: o.path,
        method: o.method ?? 'POST',
        ca: o.caPem,
        ...(o.servername ? { servername: o.servername } : {}),
        ...(o.client ? { cert: o.client.certPem, key: o.client.keyPem } : {}),
        agent: o.agent ?? false,
        headers: {
          'content-type': 'application/json',
          ...(body && !o.headers?.['transfer-encoding'] ? { 'content-length': body.length } : {}),
          ...o.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString(),
            headers: res.headers,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (body && sentBytes > 0) req.write(body.subarray(0, sentBytes));
    finish = () => req.end(body?.subarray(Math.min(sentBytes, body.length)));
  });
  return { finish, reply };
}
