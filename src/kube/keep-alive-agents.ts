import { createHash } from 'node:crypto';
import https from 'node:https';

const IDLE_SOCKET_MS = 60_000;

/** What makes two https agents interchangeable: the TLS identity and trust they connect with. */
function fingerprintOf(o: https.AgentOptions): string {
  return createHash('sha256')
    .update(JSON.stringify([o.ca, o.cert, o.key, o.pfx, o.passphrase, o.servername, o.rejectUnauthorized]))
    .digest('hex');
}

/**
 * Keep-alive replacements for the throw-away https agents client-node builds on every request
 * (each of which costs a TLS handshake): one keep-alive agent per distinct TLS options, so a
 * rotated client certificate still gets connections of its own. Bounded: the least recently
 * made agent beyond `maxAgents` is retired.
 */
export class KeepAliveAgents {
  private readonly agents = new Map<string, https.Agent>();

  constructor(
    private readonly maxAgents = 4,
    /** How long a retired agent's connections may finish what they carry before being closed. */
    private readonly retireAfterMs = 60_000,
  ) {}

  /**
   * The keep-alive agent with the TLS options of `agent`, or `agent` unchanged when it is not a
   * plain https agent (proxies, plain http).
   */
  replace<T>(agent: T): T | https.Agent {
    const given: unknown = agent;
    if (!(given instanceof https.Agent) || given.constructor !== https.Agent) return agent;
    const key = fingerprintOf(given.options);
    let shared = this.agents.get(key);
    if (shared === undefined) {
      if (this.agents.size >= this.maxAgents) {
        const oldest = this.agents.keys().next();
        if (oldest.done !== true) {
          this.retire(this.agents.get(oldest.value));
          this.agents.delete(oldest.value);
        }
      }
      // An idle connection is closed after a minute, before an API server's own idle timeout
      // (Go's default is 90 s) could close it under a request we are about to send.
      shared = new https.Agent({ ...given.options, keepAlive: true, timeout: IDLE_SOCKET_MS });
      this.agents.set(key, shared);
    }
    // The throw-away agent never opened a socket; drop its (empty) pools.
    if (shared !== given) given.destroy();
    return shared;
  }

  /** How many agents are held. */
  get size(): number {
    return this.agents.size;
  }

  /**
   * Lets every agent go: idle connections close now, busy ones after `retireAfterMs` (requests
   * are time-bounded well below that), so a request in flight is not cut off.
   */
  retireAll(): void {
    for (const agent of this.agents.values()) this.retire(agent);
    this.agents.clear();
  }

  private retire(agent: https.Agent | undefined): void {
    if (agent === undefined) return;
    for (const sockets of Object.values(agent.freeSockets)) for (const s of sockets ?? []) s.destroy();
    setTimeout(() => {
      agent.destroy();
    }, this.retireAfterMs).unref();
  }
}
