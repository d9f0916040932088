import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';

/** One accepted TCP connection, and its TLS side once the handshake is done. */
interface Connection {
  readonly raw: Socket;
  tls: TLSSocket | undefined;
  /** Requests begun and not yet answered (or abandoned). */
  active: number;
  /** Requests answered. */
  served: number;
  /** Bytes read off the wire when the last request ended: more since means a request is arriving. */
  readMark: number;
  /** Bytes read off the wire when last looked at, and when that count last grew. */
  seenRead: number;
  lastRead: number;
}

/**
 * How long a connection that has not sent a request yet counts as about to send one, from the
 * last byte it sent (its handshake included). Go's `http.Server.Shutdown` waits 5 s for such
 * connections: a client that has just connected writes its request right after the handshake,
 * and closing the connection under it would reset that request. Counted from its last byte, not
 * from accept, because on a loaded machine a hundred handshakes at once take seconds, and in
 * TLS 1.3 the client sends its request before the server has seen the end of the handshake.
 */
const NEW_CONNECTION_GRACE_MS = 5_000;

/** How often the drain looks for connections that became idle. */
const SWEEP_MS = 50;

/**
 * Every connection of an HTTPS server, from accept (before TLS) to close, with whether a request
 * is on it: what a graceful drain needs and Node does not tell. `https.Server#closeIdleConnections`
 * counts a connection that has just been accepted as idle and closes it, resetting the request
 * its client is writing; connections still in their TLS handshake it does not see at all (they
 * keep the process alive for the whole handshake timeout).
 */
export class ConnectionTracker {
  private readonly connections = new Set<Connection>();
  // Until its handshake completes a connection is known by its peer address (the same on both
  // sides of the TLS layer); then by its TLS socket.
  private readonly byPeer = new Map<string, Connection>();
  private readonly byTls = new WeakMap<TLSSocket, Connection>();

  constructor(server: Server) {
    server.on('connection', (raw: Socket) => {
      const now = Date.now();
      const c: Connection = {
        raw,
        tls: undefined,
        active: 0,
        served: 0,
        readMark: 0,
        seenRead: 0,
        lastRead: now,
      };
      const peer = peerOf(raw);
      this.connections.add(c);
      this.byPeer.set(peer, c);
      raw.once('close', () => {
        this.connections.delete(c);
        if (this.byPeer.get(peer) === c) this.byPeer.delete(peer);
      });
    });
    server.on('secureConnection', (tls: TLSSocket) => {
      const peer = peerOf(tls);
      const c = this.byPeer.get(peer);
      if (!c) return;
      this.byPeer.delete(peer);
      c.tls = tls;
      this.byTls.set(tls, c);
      tls.once('close', () => {
        this.connections.delete(c);
      });
    });
  }

  /** Open connections. */
  get size(): number {
    return this.connections.size;
  }

  /** Marks a request begun on its connection until its response closes. */
  track(req: IncomingMessage, res: ServerResponse): void {
    const c = this.byTls.get(req.socket as TLSSocket);
    if (!c) return;
    c.active++;
    res.once('close', () => {
      c.active--;
      c.served++;
      c.readMark = c.raw.bytesRead;
    });
  }

  /**
   * Closes the connections on which no request is, or is about to be: none in progress, and
   * either one answered with no byte read since, or none answered and nothing read for the grace
   * for new connections. Returns how many stay open.
   */
  closeIdle(now = Date.now()): number {
    for (const c of this.connections) {
      const read = c.raw.bytesRead;
      if (read !== c.seenRead) {
        c.seenRead = read;
        c.lastRead = now;
      }
      if (c.active > 0) continue;
      if (c.served > 0 ? read > c.readMark : now - c.lastRead < NEW_CONNECTION_GRACE_MS) continue;
      this.destroy(c);
    }
    return this.connections.size;
  }

  /** Closes every connection, whatever is on it. */
  closeAll(): void {
    for (const c of this.connections) this.destroy(c);
  }

  /**
   * Closes connections as they become idle until none is left, then resolves; at `deadline`
   * closes the rest. Requests in progress are answered first (with `Connection: close`, which
   * the server adds while draining, so their clients close those connections themselves).
   * Returns how many were still open at the deadline (closed whatever was on them).
   */
  async drain(deadline: number): Promise<number> {
    while (this.closeIdle() > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, SWEEP_MS));
    }
    const left = this.connections.size;
    this.closeAll();
    return left;
  }

  private destroy(c: Connection): void {
    this.connections.delete(c);
    c.tls?.destroy();
    c.raw.destroy();
  }
}

function peerOf(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${String(socket.remotePort ?? '')}`;
}
