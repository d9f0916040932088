import https from 'node:https';
import type { Duplex } from 'node:stream';

/** A TLS session and the server (`host:port`) it was made with. */
export interface KeptSession {
  readonly server: string;
  readonly session: Buffer;
}

/** Where a {@link ResumingAgent} keeps its latest session: something that outlives the agent. */
export interface SessionHolder {
  session: KeptSession | undefined;
}

/**
 * A keep-alive https agent whose new connections offer the latest TLS session (kept in a
 * holder, not in the agent) to the server it came from. Node's agent keeps its sessions in
 * itself, so they go with it when its TLS context is let go for memory; the holder keeps the
 * session (about 1.5 KB) for the next agent of the same identity. Resuming costs the client less
 * CPU than a full handshake (docs/figures.md, fleet scale). The holder must belong to one TLS
 * identity: a session resumed is the client certificate and the trust it was made with.
 */
export class ResumingAgent extends https.Agent {
  constructor(
    options: https.AgentOptions,
    private readonly holder: SessionHolder,
  ) {
    // One session, in the holder: none in the agent besides.
    super({ ...options, maxCachedSessions: 0 });
  }

  override createConnection(
    options: https.RequestOptions,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const server = `${options.host ?? ''}:${String(options.port ?? '')}`;
    const kept = this.holder.session;
    const offered = kept?.server === server ? kept.session : undefined;
    const withSession: https.RequestOptions & { session?: Buffer } =
      offered === undefined ? options : { ...options, session: offered };
    const socket = super.createConnection(withSession, callback);
    socket?.on('session', (session: Buffer) => {
      this.holder.session = { server, session };
    });
    // As node's own cache does: a connection that failed does not offer its session again (on
    // its error, before the request's: a retry must not offer it either).
    socket?.once('error', () => {
      if (offered !== undefined && this.holder.session?.session === offered) this.holder.session = undefined;
    });
    return socket;
  }
}
