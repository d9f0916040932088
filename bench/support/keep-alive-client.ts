import https from 'node:https';
import tls from 'node:tls';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { ResumingAgent, type SessionHolder } from '../../src/kube/resuming-agent.js';

/**
 * Raw API requests over one keep-alive agent per cluster, with the kubeconfig's TLS material
 * parsed once into a `SecureContext`: the baseline of what a request costs with nothing in the
 * way (no client library, no PEM parsing per connection). A new connection resumes the client's
 * latest TLS session, also after {@link KeepAliveClient.disconnect} and
 * {@link KeepAliveClient.remade}, as the controller's connections do (src/kube/resuming-agent.ts).
 */
export class KeepAliveClient {
  private agent: https.Agent;

  private constructor(
    private readonly kc: ClusterAccess,
    private readonly server: string,
    private readonly secureContext: tls.SecureContext,
    private readonly maxSockets: number,
    private readonly tlsSession: SessionHolder,
  ) {
    this.agent = this.newAgent();
  }

  static async create(
    kc: ClusterAccess,
    maxSockets = 8,
    tlsSession: SessionHolder = { session: undefined },
  ): Promise<KeepAliveClient> {
    const server = kc.getCurrentCluster()?.server;
    if (server === undefined) throw new Error('the kubeconfig names no cluster');
    const o: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(o);
    (o.agent as https.Agent | undefined)?.destroy();
    const secureContext = tls.createSecureContext({ ca: o.ca, cert: o.cert, key: o.key });
    return new KeepAliveClient(kc, server.replace(/\/+$/, ''), secureContext, maxSockets, tlsSession);
  }

  /**
   * A client of the same cluster with its TLS context made again from the (parsed) kubeconfig and
   * this one's TLS session to resume; this one is closed.
   */
  async remade(): Promise<KeepAliveClient> {
    this.close();
    return KeepAliveClient.create(this.kc, this.maxSockets, this.tlsSession);
  }

  private newAgent(): https.Agent {
    return new ResumingAgent(
      { keepAlive: true, maxSockets: this.maxSockets, secureContext: this.secureContext },
      this.tlsSession,
    );
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

  /** Closes the connections: the next request opens a new one (same TLS context, session resumed). */
  disconnect(): void {
    this.agent.destroy();
    this.agent = this.newAgent();
  }

  close(): void {
    this.agent.destroy();
  }
}
