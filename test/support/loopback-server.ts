import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';

/** A plain-HTTP stand-in for an API server on loopback, and an access to it. */
export interface LoopbackServer {
  readonly server: http.Server;
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Requests to {@link url} through one keep-alive agent. */
  readonly access: ClusterAccess;
  /** Ends every connection and stops listening. */
  close(): Promise<void>;
}

/** Starts `handler` on a free loopback port. */
export async function startLoopbackServer(handler: http.RequestListener): Promise<LoopbackServer> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const agent = new http.Agent({ keepAlive: true });
  return {
    server,
    url,
    access: {
      getCurrentCluster: () => ({ server: url }),
      applyToHTTPSOptions: (opts) => {
        opts.agent = agent;
        return Promise.resolve();
      },
    },
    close: async () => {
      agent.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => {
        server.close(() => {
          r();
        });
      });
    },
  };
}
