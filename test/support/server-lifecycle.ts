/** Starting and ending the loopback servers tests stand up. */
import type { AddressInfo, Server } from 'node:net';

/** Listens on a free loopback port; resolves with the port. */
export async function listenLoopback(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

/** Ends every connection of `server` (an HTTP or HTTPS one) and waits until it stops listening. */
export async function closeServer(server: Server & { closeAllConnections(): void }): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((r) => {
    server.close(() => {
      r();
    });
  });
}
