import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/**
 * The shapes of idle, slow and lying clients a webhook port sees from any Pod of the cluster:
 * - `idle-tls`: a TCP connection that never starts its TLS handshake;
 * - `idle-headers`: a POST whose headers declare a 10-byte body that never comes;
 * - `declared-large`: a POST declaring the body limit (8 MiB) that sends 16 KiB of it, then nothing;
 * - `body-trickle`: a POST declaring 100 kB that sends one byte every half second;
 * - `header-trickle`: a POST whose headers arrive one byte every half second.
 */
export type HostileShape = 'idle-tls' | 'idle-headers' | 'declared-large' | 'body-trickle' | 'header-trickle';

/** Every shape, in the order figures print them. */
export const HOSTILE_SHAPES: readonly HostileShape[] = [
  'idle-tls',
  'idle-headers',
  'declared-large',
  'body-trickle',
  'header-trickle',
];

/** Connections of one shape, each opened again as soon as the server closes it. */
export interface HostileCrowd {
  /** Connections opened so far, renewals included. */
  readonly opened: () => number;
  /** Connections open now. */
  readonly open: () => number;
  /** Closes every connection and opens no more. */
  stop(): void;
}

/** Where the crowd connects. */
export interface CrowdOptions {
  readonly port: number;
  readonly host?: string;
  /** The request path of the shapes that send one. */
  readonly path?: string;
}

const TRICKLE_MS = 500;
const DECLARED_LARGE = 8 * 1024 * 1024;
const RENEW_DELAY_MS = 50;

function headers(path: string, length: number): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${String(length)}\r\n\r\n`
  );
}

/**
 * Keeps `count` connections of `shape` open against the server, renewing each one the server
 * closes (a client that wants to hold the port does). Their answers are read and thrown away.
 */
export function startHostileCrowd(shape: HostileShape, count: number, o: CrowdOptions): HostileCrowd {
  const host = o.host ?? '127.0.0.1';
  const path = o.path ?? '/mutate';
  const live = new Set<Socket>();
  let opened = 0;
  let stopped = false;

  const openOne = (): void => {
    if (stopped) return;
    opened++;
    const timers: NodeJS.Timeout[] = [];
    const trickle = (text: string): void => {
      let i = 0;
      const timer = setInterval(() => {
        if (i >= text.length || socket.destroyed) return;
        socket.write(text[i] ?? '');
        i++;
      }, TRICKLE_MS);
      timers.push(timer);
    };
    const afterHandshake = (): void => {
      switch (shape) {
        case 'idle-headers':
          socket.write(headers(path, 10));
          break;
        case 'declared-large':
          socket.write(headers(path, DECLARED_LARGE) + '{'.padEnd(16 * 1024, ' '));
          break;
        case 'body-trickle':
          socket.write(headers(path, 100_000));
          trickle(`{"pad":"${'x'.repeat(99_990)}"}`);
          break;
        case 'header-trickle':
          trickle(headers(path, 2) + '{}');
          break;
        case 'idle-tls':
          break;
      }
    };
    const socket: Socket =
      shape === 'idle-tls'
        ? tcpConnect({ host, port: o.port })
        : tlsConnect({ host, port: o.port, rejectUnauthorized: false }, afterHandshake);
    live.add(socket);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      for (const t of timers) clearInterval(t);
      live.delete(socket);
      if (!stopped) setTimeout(openOne, RENEW_DELAY_MS).unref();
    });
  };
  for (let i = 0; i < count; i++) openOne();
  return {
    opened: () => opened,
    open: () => live.size,
    stop: () => {
      stopped = true;
      for (const s of live) s.destroy();
      live.clear();
    },
  };
}
