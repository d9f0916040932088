/**
 * A TCP front of one loopback server that a test can turn: `cut` is a partition (every
 * connection is dropped, new ones are refused until `restore`), `hold` keeps the server's answers
 * back (what clients send still reaches the server; nothing comes back until `release`), as a
 * client that stalls between sending a request and reading its answer. TLS passes through
 * untouched, so the server's own certificate is what clients verify.
 */
import { connect, createServer, type Socket } from 'node:net';

/** A running valve. */
export interface TcpValve {
  readonly port: number;
  /** Drops every connection and refuses new ones. */
  cut(): void;
  /** Accepts connections again. */
  restore(): void;
  /** Keeps the server's answers back (on every connection, also new ones). */
  hold(): void;
  /** Lets the answers held back through, and stops holding. */
  release(): void;
  /** Connections with an answer held back now. */
  heldAnswers(): number;
  /** Connections accepted since the start (a client's new TLS connections show here). */
  accepted(): number;
  stop(): Promise<void>;
}

/** Starts a valve on a free loopback port in front of `127.0.0.1:target`. */
export async function startTcpValve(target: number): Promise<TcpValve> {
  let open = true;
  let holding = false;
  let accepted = 0;
  const pairs = new Set<{ client: Socket; backend: Socket; held: Buffer[] }>();
  const server = createServer((client) => {
    if (!open) {
      client.destroy();
      return;
    }
    accepted++;
    const backend = connect({ host: '127.0.0.1', port: target });
    const pair = { client, backend, held: [] as Buffer[] };
    pairs.add(pair);
    const close = (): void => {
      client.destroy();
      backend.destroy();
      pairs.delete(pair);
    };
    for (const s of [client, backend]) {
      s.on('error', close);
      s.on('close', close);
    }
    client.pipe(backend);
    backend.on('data', (chunk: Buffer) => {
      if (holding) pair.held.push(chunk);
      else client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the valve has no port');
  const dropAll = (): void => {
    for (const { client, backend } of pairs) {
      client.destroy();
      backend.destroy();
    }
    pairs.clear();
  };
  return {
    port: address.port,
    cut() {
      open = false;
      dropAll();
    },
    restore() {
      open = true;
    },
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const pair of pairs) {
        for (const chunk of pair.held) pair.client.write(chunk);
        pair.held = [];
      }
    },
    heldAnswers() {
      let n = 0;
      for (const pair of pairs) if (pair.held.length > 0) n++;
      return n;
    },
    accepted() {
      return accepted;
    },
    async stop() {
      dropAll();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
}
