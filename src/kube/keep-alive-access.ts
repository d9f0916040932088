import https from 'node:https';
import type { ClusterAccess } from './cluster-access.js';
import { KeepAliveAgents, type KeepAliveAgentsOptions } from './keep-alive-agents.js';
import type { RequestLimits } from './request-limits.js';

/**
 * A {@link ClusterAccess} whose requests reuse connections: the agent the wrapped access makes
 * for every request (client-node's `KubeConfig` and `KubeconfigLite` both do, hence a TLS
 * handshake per request) is swapped for the keep-alive agent of the same TLS identity, whose
 * one `SecureContext` is parsed once. The request options then carry no PEMs: the agent holds
 * the identity, and node would copy them into every request's connection-pool name. Credentials
 * are still applied per request, so rotated tokens and certificates are picked up (a new
 * certificate gets an agent of its own). `close()` lets the connections go.
 */
export class KeepAliveAccess implements ClusterAccess {
  private readonly agents: KeepAliveAgents;

  /** Bounds of every call through this access (the wrapped access's when none are given). */
  readonly requestLimits: RequestLimits | undefined;

  constructor(
    private readonly inner: ClusterAccess,
    options: KeepAliveAgentsOptions = {},
    limits: RequestLimits | undefined = inner.requestLimits,
  ) {
    this.agents = new KeepAliveAgents(options);
    this.requestLimits = limits;
  }

  getCurrentCluster(): { readonly server: string } | null {
    return this.inner.getCurrentCluster();
  }

  async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    await this.inner.applyToHTTPSOptions(opts);
    const given = opts.agent;
    const shared = this.agents.replace(given);
    // Plain http or a proxy agent: as the wrapped access made it.
    if (shared === given) return;
    opts.agent = shared;
    delete opts.ca;
    delete opts.cert;
    delete opts.key;
    delete opts.pfx;
    delete opts.passphrase;
  }

  /** The same connections under other limits (calls that must not wait for what `pace` paces). */
  withLimits(limits: RequestLimits | undefined): ClusterAccess {
    return {
      getCurrentCluster: () => this.getCurrentCluster(),
      applyToHTTPSOptions: (opts) => this.applyToHTTPSOptions(opts),
      requestLimits: limits,
    };
  }

  /** Open connections (busy and idle). */
  get sockets(): number {
    return this.agents.sockets;
  }

  /** Lets go of TLS identities unused for `idleMs` with no connection open (see KeepAliveAgents). */
  retireIdle(idleMs: number): number {
    return this.agents.retireIdle(idleMs);
  }

  /** Closes idle connections now and busy ones once their requests had time to end. */
  close(): void {
    this.agents.retireAll();
  }
}
