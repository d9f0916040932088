/**
 * A Service's load balancing for webhook processes on loopback. kube-apiserver cannot route a
 * Service to a loopback process here (EndpointSlices refuse loopback addresses), so a URL
 * registration points at this TCP front, which hands each new connection to the next of the
 * current backends, round robin. TLS passes through untouched: the API server checks the
 * backend's own certificate. Changing the backends is an endpoint change: connections already
 * open stay where they are until either side closes them.
 */
import { connect, createServer, type Socket } from 'node:net';

/** A running balancer. */
export interface TcpBalancer {
  readonly port: number;
  /** The ports new connections go to from now on. */
  setBackends(ports: readonly number[]): void;
  stop(): Promise<void>;
}

/** Starts a balancer on a free loopback port. */
export async function startTcpBalancer(backends: readonly number[]): Promise<TcpBalancer> {
  let current = [...backends];
  let turn = 0;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const port = current[turn++ % Math.max(1, current.length)];
    if (port === undefined) {
      client.destroy();
      return;
    }
    const backend = connect({ host: '127.0.0.1', port });
    open.add(client);
    open.add(backend);
    const close = (): void => {
      client.destroy();
      backend.destroy();
      open.delete(client);
      open.delete(backend);
    };
    for (const s of [client, backend]) {
      s.on('error', close);
      s.on('close', close);
    }
    client.pipe(backend);
    backend.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the balancer has no port');
  return {
    port: address.port,
    setBackends(ports) {
      current = [...ports];
    },
    async stop() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
}
