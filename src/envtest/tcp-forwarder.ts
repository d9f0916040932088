import { connect, createServer, type Server, type Socket } from 'node:net';

/** A TCP forwarder: what kube-proxy (or the host's routing) would do for what Pods here need. */
export interface TcpForwarder {
  close(): Promise<void>;
}

/**
 * Forwards `listenHost:listenPort` (an address on the node's bridge, which Pods reach) to
 * `targetPort` on loopback, byte for byte: TLS stays end to end. The node forwards the
 * `kubernetes` Service's ClusterIP to the API server this way, and the local registries to Pods.
 */
export function forwardTcp(
  listenHost: string,
  listenPort: number,
  targetPort: number,
): Promise<TcpForwarder> {
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
