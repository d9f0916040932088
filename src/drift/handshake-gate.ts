/**
 * Bounds the connections of a TLS server that have not finished their handshake: anyone who can
 * reach the KCP's drift listener can open them, before any certificate is checked, on the
 * controller's event loop. Enforced on the raw TCP socket, before TLS reads a byte of it.
 */
import type { Socket } from 'node:net';
import type { Server, TLSSocket } from 'node:tls';
import type { Counter, Gauge, Registry } from 'prom-client';
import { counterOn, gaugeOn } from '../telemetry/prom-metrics.js';

/**
 * Handshakes in flight at most (default): runtimes attest every few minutes and report drift
 * now and then, each a handshake of a round trip or two, so thousands of runtimes keep a few in
 * flight; a KCP restart's reconnects spread over half a minute.
 */
export const DEFAULT_MAX_PENDING_HANDSHAKES = 256;
/** How long a connection may take from its first byte to a finished handshake (default). */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;

/** Why a connection was closed before its handshake finished: the `reason` label. */
export type HandshakeRefusal = 'limit' | 'timeout';

/** The gate's metrics: closed label sets, nothing per runtime or peer. */
export interface HandshakeMetrics {
  readonly inFlight: Gauge;
  readonly refused: Counter<'reason'>;
}

/** Registers (or finds) the gate's metrics on `registry`. */
export function createHandshakeMetrics(registry: Registry): HandshakeMetrics {
  return {
    inFlight: gaugeOn(registry, {
      name: 'rtb_drift_listener_handshakes_in_flight',
      help: 'Connections to the drift listener whose TLS handshake has not finished.',
      labelNames: [],
    }),
    refused: counterOn(registry, {
      name: 'rtb_drift_listener_handshakes_refused_total',
      help: 'Connections closed before their TLS handshake finished: limit (the oldest made room for a new one), timeout.',
      labelNames: ['reason'],
    }),
  };
}

/** Settings of {@link gateHandshakes}. */
export interface HandshakeGateOptions {
  /** Handshakes in flight at most (default {@link DEFAULT_MAX_PENDING_HANDSHAKES}). */
  readonly maxPending?: number;
  /** Time from the connection to a finished handshake (default {@link DEFAULT_HANDSHAKE_TIMEOUT_MS}). */
  readonly timeoutMs?: number;
  readonly metrics: HandshakeMetrics;
}

/**
 * Counts each connection of `server` from its TCP accept to its finished handshake. One that takes
 * longer than the timeout is closed; past the bound, the oldest unfinished one is closed to make
 * room for the new one, at once. Closing the oldest rather than refusing the newest: idle
 * connections held by whoever fills the bound are the oldest, so they cannot lock runtimes out; to
 * push out a runtime's handshake (a round trip or two) one must open the bound's worth of
 * connections within that handshake's time.
 */
export function gateHandshakes(server: Server, o: HandshakeGateOptions): void {
  const max = o.maxPending ?? DEFAULT_MAX_PENDING_HANDSHAKES;
  const timeoutMs = o.timeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
  // Insertion order is age: the first key is the oldest handshake in flight.
  const pending = new Map<Socket, NodeJS.Timeout>();
  /** The same connections by their addresses, for a TLS socket that does not name its own. */
  const byPeer = new Map<string, Socket>();
  const peers = new WeakMap<Socket, string>();

  const settle = (socket: Socket): boolean => {
    const timer = pending.get(socket);
    if (timer === undefined) return false;
    clearTimeout(timer);
    pending.delete(socket);
    const peer = peers.get(socket);
    if (peer !== undefined && byPeer.get(peer) === socket) byPeer.delete(peer);
    o.metrics.inFlight.set(pending.size);
    return true;
  };
  const refuse = (socket: Socket, reason: HandshakeRefusal): void => {
    if (!settle(socket)) return;
    o.metrics.refused.inc({ reason });
    socket.destroy();
  };

  // Before the TLS server's own listener: the socket is counted (or the oldest closed) before
  // TLS starts reading it.
  server.prependListener('connection', (socket: Socket) => {
    if (pending.size >= max) {
      const [oldest] = pending.keys();
      if (oldest !== undefined) refuse(oldest, 'limit');
    }
    const timer = setTimeout(() => {
      refuse(socket, 'timeout');
    }, timeoutMs);
    timer.unref();
    pending.set(socket, timer);
    const peer = peerOf(socket);
    if (peer !== undefined) {
      peers.set(socket, peer);
      byPeer.set(peer, socket);
    }
    o.metrics.inFlight.set(pending.size);
    socket.once('close', () => settle(socket));
  });
  server.on('secureConnection', (tls: TLSSocket) => {
    // Node keeps the TCP socket a server's TLS socket wraps as `_parent` (not documented); the
    // addresses name it as well.
    const parent = (tls as unknown as { _parent?: unknown })._parent;
    if (parent instanceof Object && pending.has(parent as Socket)) settle(parent as Socket);
    else {
      const peer = peerOf(tls);
      const raw = peer === undefined ? undefined : byPeer.get(peer);
      if (raw !== undefined) settle(raw);
    }
  });
}

function peerOf(s: Socket): string | undefined {
  return s.remoteAddress === undefined || s.remotePort === undefined
    ? undefined
    : `${s.localAddress ?? ''}|${s.localPort ?? ''}|${s.remoteAddress}|${s.remotePort}`;
}
