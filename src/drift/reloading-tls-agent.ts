import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import { createSecureContext } from 'node:tls';
import type { Logger } from 'pino';
import { PkiError } from '../pki/crypto-provider.js';
import { DEFAULT_TLS_MIN_VERSION, type TlsMinVersion } from '../api/tls-min-version.js';

/** Files of the forwarder's mutual TLS material (PEM), as mounted from a Secret, and the TLS floor. */
export interface ClientTlsFiles {
  /** The runtime's client certificate (CN = runtime ID, DNS SAN = the runtime's domain). */
  readonly certFile: string;
  readonly keyFile: string;
  /** The CA that signed the KCP listener's serving certificate. */
  readonly caFile: string;
  /** The oldest TLS version offered to the listener (default {@link DEFAULT_TLS_MIN_VERSION}). */
  readonly minVersion?: TlsMinVersion;
}

/** Settings of {@link ReloadingTlsAgent}. */
export interface ReloadingTlsAgentOptions {
  readonly files: ClientTlsFiles;
  /** Re-read the files at most this often (ms); 0 re-reads before every connection use. */
  readonly checkIntervalMs: number;
  /** Idle keep-alive sockets are closed after this long (ms). */
  readonly idleSocketMs: number;
  readonly logger: Logger;
  readonly onReload: (result: 'success' | 'failure') => void;
}

/**
 * A keep-alive HTTPS agent whose client certificate follows its files. Before handing out the
 * agent it re-reads the files (at most every `checkIntervalMs`, or at once after
 * {@link invalidate}); when their content changed and the new key fits the new certificate,
 * it replaces the agent, so the next request opens a connection with the new material. The
 * caller must not hold requests on the old agent when asking (the forwarder sends one at a
 * time), because the old agent's sockets are destroyed.
 */
export class ReloadingTlsAgent {
  private agent: Agent | undefined;
  private digest = '';
  private checkedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly opts: ReloadingTlsAgentOptions) {}

  /** The agent to use now; throws PkiError while no material was ever usable. */
  async current(): Promise<Agent> {
    const now = performance.now();
    if (this.agent !== undefined && now - this.checkedAt < this.opts.checkIntervalMs) return this.agent;
    this.checkedAt = now;
    let cert: Buffer, key: Buffer, ca: Buffer;
    try {
      [cert, key, ca] = await Promise.all([
        readFile(this.opts.files.certFile),
        readFile(this.opts.files.keyFile),
        readFile(this.opts.files.caFile),
      ]);
    } catch (cause) {
      // A Secret volume swaps its files through a symlink; a read may fall between the two.
      if (this.agent !== undefined) return this.agent;
      throw new PkiError('cannot read the client certificate, key or CA', { cause });
    }
    const digest = createHash('sha256').update(cert).update(key).update(ca).digest('hex');
    if (this.agent !== undefined && digest === this.digest) return this.agent;
    try {
      // Throws when the key does not belong to the certificate, e.g. between two file writes.
      createSecureContext({ cert, key, ca });
    } catch (cause) {
      this.opts.onReload('failure');
      if (this.agent !== undefined) {
        this.opts.logger.warn('new client certificate and key do not fit together yet; keeping the old pair');
        return this.agent;
      }
      throw new PkiError('the client certificate, key and CA are not usable together', { cause });
    }
    const replaced = this.agent;
    this.agent = new Agent({
      keepAlive: true,
      // One request at a time; one connection is all the forwarder needs.
      maxSockets: 1,
      // Shorter than the listener's keep-alive, so we close an idle socket before it does and
      // never write a request into a connection the server is closing.
      timeout: this.opts.idleSocketMs,
      cert,
      key,
      ca,
      minVersion: this.opts.files.minVersion ?? DEFAULT_TLS_MIN_VERSION,
    });
    this.digest = digest;
    replaced?.destroy();
    this.opts.onReload('success');
    if (replaced !== undefined) this.opts.logger.info('client certificate reloaded');
    return this.agent;
  }

  /** Makes the next {@link current} re-read the files (after a connection failed, say). */
  invalidate(): void {
    this.checkedAt = Number.NEGATIVE_INFINITY;
  }

  /** Closes every socket. */
  destroy(): void {
    this.agent?.destroy();
    this.agent = undefined;
    this.digest = '';
  }
}
