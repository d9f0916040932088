import { X509Certificate, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import { LogRateLimit, type LogRateLimitOptions } from '../telemetry/log-rate-limit.js';
import { ATTESTATION_PATH } from '../api/attestation.js';
import { parseCas } from './trusted-cas.js';
import { receiveAttestation, type AttestationHandler } from './attestation-receiver.js';
import { BodyTooLargeError, readLimitedBody } from './limited-body.js';
import {
  createHandshakeMetrics,
  DEFAULT_HANDSHAKE_TIMEOUT_MS,
  DEFAULT_MAX_PENDING_HANDSHAKES,
  gateHandshakes,
} from './handshake-gate.js';
import { acceptedKind, createListenerMetrics, type ListenerMetrics } from './listener-metrics.js';
import { issuedByOneOf, peerIdentityOf, verifyPeer, type PeerIdentity } from './peer-identity.js';
import { RuntimeRateLimiter, type RuntimeRateLimit } from './runtime-rate-limiter.js';
import { WATCH_EVENT_PATH, WatchEventError, parseWatchEvent, type WatchEvent } from './watch-event.js';
import { DEFAULT_TLS_MIN_VERSION, type TlsMinVersion } from '../api/tls-min-version.js';

/** The listener's serving certificate and key (PEM). */
export interface ListenerTls {
  readonly certPem: string;
  readonly keyPem: string;
}

/**
 * How long the listener honours a TLS session for resumption. Runtimes attest every few minutes
 * (docs/attestation.md), each time on a new connection; resuming skips the certificate exchange
 * and its verification, about half the handshake's CPU. Tickets are re-keyed whenever the
 * trusted CAs or the serving certificate change, so no session outlives a change of trust.
 */
export const SESSION_TIMEOUT_SECONDS = 20 * 60;

/**
 * Node's own handshake timeout, behind the gate's (./handshake-gate.ts): it only backs it up, so
 * it comes a second later.
 */
const NODE_HANDSHAKE_BACKSTOP_MS = 1_000;

/**
 * How long a refused (429) request waits for its answer: one token's refill time of the
 * runtime's bucket (200 ms at the default 5 per second), at most 1 s. Answered at once, a refusal
 * is cheap but unbounded in number: one runtime's keep-alive connections sending without pause
 * took a noticeable share of a core (docs/figures.md, KCP hostile runtimes).
 * Held, each connection of a runtime over its rate costs about `perSecond` requests a second; a
 * held request costs a timer on a connection the client could keep open idle anyway.
 */
export function refusalHoldMs(perSecond: number): number {
  return Math.min(1_000, 1_000 / perSecond);
}

/** Settings of the KCP drift listener. */
export interface EventListenerOptions {
  readonly tls: ListenerTls;
  /** Client certificates must be issued by one of these (old and new during a CA rotation). */
  readonly trustedCaPems: readonly string[];
  readonly host?: string;
  /** Default 8443; 0 picks a free port. */
  readonly port?: number;
  /** The oldest TLS version accepted (default {@link DEFAULT_TLS_MIN_VERSION}). */
  readonly minVersion?: TlsMinVersion;
  /** The runtime a client certificate's CN names, with its known domain; undefined if unknown. */
  readonly lookupRuntime: (runtimeId: string) => { domain: string } | undefined;
  /** Called for each accepted event; should only enqueue (it runs before the 202 is sent). */
  readonly onEvent: (runtimeId: string, event: WatchEvent, receivedAt: number) => void;
  /** Attestations (../api/attestation.ts) at ATTESTATION_PATH; 404 there when undefined. */
  readonly onAttestation?: AttestationHandler;
  /** Per runtime (default 5 per second, burst 20). */
  readonly rateLimit?: RuntimeRateLimit;
  /**
   * TLS handshakes in flight at most, anyone's (default 256): past it the oldest is closed
   * (./handshake-gate.ts).
   */
  readonly maxPendingHandshakes?: number;
  /** Time from a connection to its finished handshake (default 10 s). */
  readonly handshakeTimeoutMs?: number;
  /** Largest accepted body (default 16 KiB; an event is about 150 bytes). */
  readonly bodyLimitBytes?: number;
  readonly registry: Registry;
  readonly logger: Logger;
  /** Repeated lines of one kind (a refused certificate per request): default 5 per 10 s. */
  readonly logRateLimit?: LogRateLimitOptions;
}

/** What a connection proved, computed on its first request and kept for the next ones. */
interface ConnectionTrust {
  readonly identity: PeerIdentity;
  /** The trusted-CA generation the peer certificate was last checked against. */
  generation: number;
}

/**
 * The KCP end of the drift channel: an HTTPS server that accepts WatchEvents from runtimes over
 * mutual TLS. A client certificate not issued by a trusted CA is refused in the handshake; then
 * the CN must name a known runtime and a DNS SAN must equal its domain (SAN pinning, else 403).
 * Each runtime has its own token bucket (429 with Retry-After, before the body is read, answered
 * after one token's refill time so that a connection cannot ask again at once), bodies
 * are bounded (413), and an accepted event is handed to `onEvent` and answered 202. Trusted CAs
 * and the serving certificate can be replaced while running.
 */
export class EventListener {
  private readonly server: Server;
  private readonly metrics: ListenerMetrics;
  private readonly limiter: RuntimeRateLimiter;
  private readonly holdMs: number;
  /** One line per refused request would let any client with a certificate of our CA fill the logs. */
  private readonly logLimit: LogRateLimit;
  private readonly bodyLimit: number;
  private readonly minVersion: TlsMinVersion;
  private readonly trust = new WeakMap<TLSSocket, ConnectionTrust>();
  /** The trusted-CA generation each connection's handshake (full or resumed) ran under. */
  private readonly handshakeGeneration = new WeakMap<TLSSocket, number>();
  private tls: ListenerTls;
  private trustedCaPems: string[];
  private trustedCas: X509Certificate[];
  private generation = 0;
  /** `performance.now()` of the latest change of the trusted CAs. */
  private trustChangedAt = -Infinity;
  /** The longest a handshake may take (the gate's timeout and Node's backstop). */
  private readonly handshakeMaxMs: number;

  constructor(private readonly opts: EventListenerOptions) {
    this.metrics = createListenerMetrics(opts.registry);
    const rateLimit = opts.rateLimit ?? { perSecond: 5, burst: 20 };
    this.limiter = new RuntimeRateLimiter(rateLimit);
    this.holdMs = refusalHoldMs(rateLimit.perSecond);
    this.logLimit = new LogRateLimit(opts.logger, opts.logRateLimit);
    this.bodyLimit = opts.bodyLimitBytes ?? 16 * 1024;
    this.minVersion = opts.minVersion ?? DEFAULT_TLS_MIN_VERSION;
    this.tls = opts.tls;
    this.trustedCaPems = [...opts.trustedCaPems];
    this.trustedCas = parseCas(opts.trustedCaPems);
    const handshakeTimeoutMs = opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    this.handshakeMaxMs = handshakeTimeoutMs + NODE_HANDSHAKE_BACKSTOP_MS;
    this.server = createServer(
      {
        cert: opts.tls.certPem,
        key: opts.tls.keyPem,
        ca: this.trustedCaPems,
        requestCert: true,
        rejectUnauthorized: true,
        minVersion: this.minVersion,
        sessionTimeout: SESSION_TIMEOUT_SECONDS,
        // A peer that never finishes its handshake or headers must not hold a socket for long;
        // the gate below closes it first, counted.
        handshakeTimeout: this.handshakeMaxMs,
        headersTimeout: 10_000,
        requestTimeout: 15_000,
        // Longer than the forwarder's 30 s idle timeout: the client closes first, so it never
        // writes into a connection we are closing.
        keepAliveTimeout: 60_000,
      },
      (req, res) => {
        this.onRequest(req, res);
      },
    );
    gateHandshakes(this.server, {
      maxPending: opts.maxPendingHandshakes ?? DEFAULT_MAX_PENDING_HANDSHAKES,
      timeoutMs: handshakeTimeoutMs,
      metrics: createHandshakeMetrics(opts.registry),
    });
    this.server.on('secureConnection', (socket: TLSSocket) => {
      // A handshake that began before the latest change of trust ran under the old CAs: within a
      // handshake's time limit of that change, leave the connection to the full re-check.
      if (performance.now() - this.trustChangedAt >= this.handshakeMaxMs)
        this.handshakeGeneration.set(socket, this.generation);
    });
    this.server.on('tlsClientError', (error) => {
      this.metrics.tlsHandshakeFailures.inc();
      // The error names the failed check (e.g. unknown CA), never key material.
      opts.logger.debug({ err: error }, 'drift listener: TLS handshake failed');
    });
  }

  /** Starts listening; resolves with the bound port. */
  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port ?? 8443, this.opts.host ?? '0.0.0.0', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return (this.server.address() as AddressInfo).port;
  }

  /**
   * Replaces the CAs client certificates must chain to. New handshakes use them at once; session
   * tickets are re-keyed so no client resumes past the new check, and open connections are
   * re-checked on their next request (one whose certificate is no longer trusted is closed).
   */
  setTrustedCas(pems: readonly string[]): void {
    const parsed = parseCas(pems);
    this.applySecureContext(this.tls, pems);
    this.trustedCaPems = [...pems];
    this.trustedCas = parsed;
    // Open connections are not cut here (a client still trusted would see a needless reset);
    // each is re-checked on its next request instead.
    this.generation++;
    this.trustChangedAt = performance.now();
  }

  /** Replaces the serving certificate for new connections (renewal). */
  setServingCertificate(tls: ListenerTls): void {
    this.applySecureContext(tls, this.trustedCaPems);
    this.tls = tls;
  }

  /** Stops accepting, lets requests in flight finish for up to `timeoutMs`, then closes all. */
  async close(timeoutMs = 5_000): Promise<void> {
    const closed = new Promise<void>((resolve) => {
      this.server.close(() => {
        resolve();
      });
    });
    this.server.closeIdleConnections();
    const timer = setTimeout(() => {
      this.server.closeAllConnections();
    }, timeoutMs);
    await closed;
    clearTimeout(timer);
    this.logLimit.flush();
  }

  private applySecureContext(tls: ListenerTls, caPems: readonly string[]): void {
    // Throws on a key that does not fit the certificate, leaving the previous context in force.
    this.server.setSecureContext({
      cert: tls.certPem,
      key: tls.keyPem,
      ca: [...caPems],
      // Fields left out here fall back to defaults, not to the constructor's values.
      minVersion: this.minVersion,
      sessionTimeout: SESSION_TIMEOUT_SECONDS,
      // A resumed session skips the client certificate, so no ticket issued under the previous
      // trust may be honoured. Node makes fresh keys when none are given but keeps given ones;
      // passing new ones each time does not depend on which happened before.
      ticketKeys: randomBytes(48),
    });
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const started = process.hrtime.bigint();
    const reply = (status: number, body: string, headers: Record<string, string> = {}): void => {
      if (!res.headersSent) {
        res.writeHead(status, {
          'content-type': 'text/plain; charset=utf-8',
          ...headers,
          'content-length': Buffer.byteLength(body),
        });
        res.end(body);
      }
      const code = String(status);
      this.metrics.requests.inc({ code });
      this.metrics.duration.observe({ code }, Number(process.hrtime.bigint() - started) / 1e9);
    };
    const path = (req.url ?? '/').split('?')[0];
    const attest = path === ATTESTATION_PATH ? this.opts.onAttestation : undefined;
    if (path !== WATCH_EVENT_PATH && attest === undefined) {
      reply(404, 'not found');
      return;
    }
    if (req.method !== 'POST') {
      reply(405, 'only POST is allowed', { allow: 'POST' });
      return;
    }
    const socket = req.socket as TLSSocket;
    const trust = this.connectionTrust(socket);
    if (trust === undefined) {
      // A connection from before the trusted CAs changed, whose certificate they no longer cover:
      // end it as the handshake would now, so the client reconnects (perhaps with a renewed
      // certificate) instead of reading a final answer.
      this.metrics.rejectedVerifications.inc({ reason: 'untrusted_ca' });
      socket.destroy();
      return;
    }
    let verdict;
    try {
      verdict = verifyPeer(trust.identity, this.opts.lookupRuntime);
    } catch (error) {
      this.logLimit.error(this.opts.logger, { err: error }, 'drift listener: runtime lookup failed');
      reply(503, 'runtime lookup failed');
      return;
    }
    if (!verdict.ok) {
      this.metrics.rejectedVerifications.inc({ reason: verdict.reason });
      this.logLimit.warn(
        this.opts.logger,
        { runtimeId: trust.identity.commonName, reason: verdict.reason },
        'drift listener: client certificate refused',
      );
      reply(
        403,
        verdict.reason === 'unknown_runtime'
          ? 'unknown runtime'
          : 'certificate does not name the runtime domain',
      );
      return;
    }
    // Cheap before the body is read: a flooding runtime costs a map lookup and a short answer,
    // held for a moment so that a connection cannot ask again at once (refusalHoldMs).
    const waitMs = this.limiter.tryTake(verdict.runtimeId);
    if (waitMs > 0) {
      const retryAfter = String(Math.max(1, Math.ceil(waitMs / 1000)));
      const held = setTimeout(() => {
        reply(429, 'too many drift events', { 'retry-after': retryAfter });
      }, this.holdMs);
      res.once('close', () => {
        clearTimeout(held);
      });
      return;
    }
    const runtimeId = verdict.runtimeId;
    if (attest === undefined) void this.receive(req, runtimeId, reply);
    else
      void receiveAttestation(req, runtimeId, attest, reply, (err) => {
        this.logLimit.error(
          this.opts.logger,
          { err, runtimeId },
          'drift listener: attestation handler failed',
        );
      });
  }

  private async receive(
    req: IncomingMessage,
    runtimeId: string,
    reply: (status: number, body: string, headers?: Record<string, string>) => void,
  ): Promise<void> {
    let event: WatchEvent;
    try {
      event = parseWatchEvent(await readLimitedBody(req, this.bodyLimit));
    } catch (error) {
      if (error instanceof BodyTooLargeError) reply(413, error.message, { connection: 'close' });
      else if (error instanceof WatchEventError) reply(400, error.message);
      else reply(400, 'unreadable body');
      return;
    }
    try {
      this.opts.onEvent(runtimeId, event, Date.now());
    } catch (error) {
      this.logLimit.error(
        this.opts.logger,
        { err: error, runtimeId },
        'drift listener: event handler failed',
      );
      reply(500, 'event not accepted');
      return;
    }
    this.metrics.eventsAccepted.inc({ kind: acceptedKind(event.watchedGvk.kind) });
    reply(202, 'accepted');
  }

  /** The connection's identity, checked against the current CAs; undefined if no longer trusted. */
  private connectionTrust(socket: TLSSocket): ConnectionTrust | undefined {
    const known = this.trust.get(socket);
    if (known?.generation === this.generation) return known;
    if (known === undefined && this.handshakeGeneration.get(socket) === this.generation) {
      // The handshake verified the chain against the current CAs (a resumed one used a ticket of
      // the current keys, re-keyed with every change): no need to verify it again.
      const fresh = { identity: peerIdentityOf(socket.getPeerCertificate()), generation: this.generation };
      this.trust.set(socket, fresh);
      return fresh;
    }
    const peer = socket.getPeerX509Certificate();
    if (peer === undefined || !issuedByOneOf(peer, this.trustedCas)) return undefined;
    const trust = known ?? { identity: peerIdentityOf(socket.getPeerCertificate()), generation: 0 };
    trust.generation = this.generation;
    this.trust.set(socket, trust);
    return trust;
  }
}
