import type { KubeConfig } from '@kubernetes/client-node';
import https from 'node:https';

/**
 * Raw API requests over one keep-alive agent per cluster, with the kubeconfig's TLS material:
 * the baseline of what a request costs once its connection exists. (client-node, and
 * `kubeRequest` through `applyToHTTPSOptions`, make a new agent, so a new TLS connection, for
 * every request.)
 */
export class KeepAliveClient {
  private constructor(
    private readonly server: string,
    private readonly agent: https.Agent,
  ) {}

  static async create(kc: KubeConfig): Promise<KeepAliveClient> {
    const server = kc.getCurrentCluster()?.server;
    if (server === undefined) throw new Error('the kubeconfig names no cluster');
    const o: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(o);
    const agent = new https.Agent({ keepAlive: true, maxSockets: 8, ca: o.ca, cert: o.cert, key: o.key });
    return new KeepAliveClient(server.replace(/\/+$/, ''), agent);
  }

  /** One request; rejects on a status of 300 or more. */
  request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<string> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = https.request(
        `${this.server}${path}`,
        {
          method,
          agent: this.agent,
          headers: {
            accept: 'application/json',
            ...(payload !== undefined
              ? { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) }
              : {}),
          },
          timeout: 30_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if ((res.statusCode ?? 0) >= 300)
              reject(new Error(`${method} ${path}: ${res.statusCode ?? 0} ${text.slice(0, 300)}`));
            else resolve(text);
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
