import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP forwarder: what kube-proxy would do for the one Service that Pods here need. */
export interface ApiForwarder {
  close(): Promise<void>;
}

/**
 * Forwards `listenHost:listenPort` (the ClusterIP of `default/kubernetes`, on the node's bridge)
 * to the API server on loopback, byte for byte: TLS stays end to end.
 */
export function forwardApiServer(
  listenHost: string,
  listenPort: number,
  targetPort: number,
): Promise<ApiForwarder> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.once('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, listenHost, () => {
      server.off('error', reject);
      resolve({
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => {
              done();
            });
          }),
      });
    });
  });
}
