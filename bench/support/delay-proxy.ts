// A delaying TCP proxy: puts a round trip between the controller and a runtime's API server, as a
// runtime in another region has (the KCP stays local, as in production). Per accepted connection
// it opens one to the target and forwards bytes both ways unchanged (TLS passes through: the
// server's certificate names 127.0.0.1, which the proxy's address is too), each chunk held
// rttMs / 2 in each direction, so a request and its answer cost one round trip; the upstream
// connection is opened one round trip after the accept, which stands for TCP's own handshake (the
// local accept itself is instant). Order is kept per direction (one queue, one timer each);
// bandwidth is not limited and nothing is dropped. The fleet benchmark runs its proxies in a
// process of their own (./delay-proxy-child.ts): their CPU is neither the controller's nor the
// floors'.
import { createServer, connect, type Server, type Socket } from 'node:net';

/** A running proxy. */
export interface DelayProxy {
  /** The port it listens on (127.0.0.1). */
  readonly port: number;
  close(): Promise<void>;
}

/** Writes chunks to `to`, each no earlier than its due time, in the order they came. */
class DelayedPipe {
  private readonly queue: { due: number; chunk: Buffer | null }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private notBefore = 0;

  constructor(
    private readonly to: () => Socket | undefined,
    private readonly delayMs: number,
  ) {}

  /** Holds everything until `at` (epoch ms) at least. */
  holdUntil(at: number): void {
    this.notBefore = at;
  }

  /** Queues a chunk (null: the end of the stream). */
  push(chunk: Buffer | null): void {
    this.queue.push({ due: Math.max(Date.now() + this.delayMs, this.notBefore), chunk });
    this.schedule();
  }

  /** Sends what is due, once the target exists. */
  flush(): void {
    const to = this.to();
    if (to === undefined) return;
    const now = Date.now();
    while (this.queue.length > 0 && (this.queue[0]?.due ?? Infinity) <= now) {
      const next = this.queue.shift();
      if (next?.chunk === null) to.end();
      else if (next !== undefined && !to.destroyed) to.write(next.chunk);
    }
    this.schedule();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
  }

  private schedule(): void {
    const head = this.queue[0];
    if (this.timer !== undefined || head === undefined) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.flush();
      },
      Math.max(0, head.due - Date.now()),
    );
  }
}

/** Starts a proxy on 127.0.0.1 forwarding to `targetPort` there, with a round trip of `rttMs`. */
export async function startDelayProxy(targetPort: number, rttMs: number): Promise<DelayProxy> {
  const half = rttMs / 2;
  const sockets = new Set<Socket>();
  const server: Server = createServer({ noDelay: true }, (client) => {
    sockets.add(client);
    let upstream: Socket | undefined;
    const toUpstream = new DelayedPipe(() => upstream, half);
    const toClient = new DelayedPipe(() => client, half);
    toUpstream.holdUntil(Date.now() + rttMs);
    const closeBoth = (): void => {
      toUpstream.stop();
      toClient.stop();
      client.destroy();
      upstream?.destroy();
      sockets.delete(client);
    };
    client.on('data', (chunk) => {
      toUpstream.push(chunk);
    });
    client.on('end', () => {
      toUpstream.push(null);
    });
    client.on('error', closeBoth);
    client.on('close', closeBoth);
    // TCP's handshake to a far server: the connection exists one round trip after the accept.
    setTimeout(() => {
      if (client.destroyed) return;
      const up = connect({ host: '127.0.0.1', port: targetPort, noDelay: true });
      upstream = up;
      up.on('connect', () => {
        toUpstream.flush();
      });
      up.on('data', (chunk) => {
        toClient.push(chunk);
      });
      up.on('end', () => {
        toClient.push(null);
      });
      up.on('error', closeBoth);
      up.on('close', () => {
        // What the server sent before it closed still arrives, late as everything else.
        setTimeout(closeBoth, half + 1);
      });
    }, rttMs);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the delay proxy has no port');
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => {
          resolve();
        });
      }),
  };
}
