import https from 'node:https';
import tls from 'node:tls';
import { ResumingAgent, type SessionHolder } from './resuming-agent.js';

/** Default of {@link KeepAliveAgentsOptions.idleSocketMs}. */
export const IDLE_SOCKET_MS = 30_000;

/** The TLS material a connection is made with: what makes two connections interchangeable. */
export interface TlsIdentity {
  readonly ca?: https.AgentOptions['ca'];
  readonly cert?: https.AgentOptions['cert'];
  readonly key?: https.AgentOptions['key'];
  readonly pfx?: https.AgentOptions['pfx'];
  readonly passphrase?: string | undefined;
  readonly servername?: string | undefined;
  readonly rejectUnauthorized?: boolean | undefined;
}

/** Options of {@link KeepAliveAgents}. */
export interface KeepAliveAgentsOptions {
  /** Identities held at once; the least recently used one beyond is retired (default 4). */
  readonly maxAgents?: number;
  /** How long a retired agent's connections may finish what they carry before being closed. */
  readonly retireAfterMs?: number;
  /**
   * An idle connection is closed after this long (default {@link IDLE_SOCKET_MS}): below an API
   * server's own idle timeout (Go's default is 90 s), so it never closes one under a request we
   * are about to send, and short enough that thousands of runtimes do not hold a socket each.
   */
  readonly idleSocketMs?: number;
  /** Connections per agent at once (default unbounded: bounded by the callers' concurrency). */
  readonly maxSockets?: number;
}

const IDENTITY_FIELDS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'servername',
  'rejectUnauthorized',
] as const satisfies readonly (keyof TlsIdentity)[];

/** Same material: the same objects (the usual case), else equal bytes; never a hash. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => sameValue(v, b[i]));
  if (typeof a === 'string' && Buffer.isBuffer(b)) return b.equals(Buffer.from(a));
  if (Buffer.isBuffer(a) && typeof b === 'string') return a.equals(Buffer.from(b));
  return false;
}

function sameIdentity(a: TlsIdentity, b: TlsIdentity): boolean {
  return IDENTITY_FIELDS.every((f) => sameValue(a[f], b[f]));
}

/** The identity fields of `o` (references, not copies). */
function identityOf(o: TlsIdentity): TlsIdentity {
  const out: Record<string, unknown> = {};
  for (const f of IDENTITY_FIELDS) if (o[f] !== undefined) out[f] = o[f];
  return out;
}

/** Whether any of an agent's pools (sockets, free sockets, queued requests) holds something. */
const anyIn = (...pools: NodeJS.ReadOnlyDict<readonly unknown[]>[]): boolean =>
  pools.some((pool) => Object.values(pool).some((list) => (list?.length ?? 0) > 0));

interface Entry extends SessionHolder {
  readonly identity: TlsIdentity;
  /** Undefined once let go for being idle ({@link KeepAliveAgents.retireIdle}): made again when needed. */
  agent: https.Agent | undefined;
  /** Epoch ms of the last request. */
  lastUsed: number;
}

/**
 * One keep-alive https agent per TLS identity, each with ONE `SecureContext` made when the
 * identity is first seen: OpenSSL parses the CA, certificate and key once, not on every
 * connection, and the agent's options carry no PEMs (node builds each request's pool name from
 * them). An identity is found by comparing its material with the held ones (the same buffers in
 * the usual case, else their bytes), so a rotated client certificate gets an agent of its own.
 * Bounded: the least recently used identity beyond the limit is retired. An identity idle long
 * enough loses its agent and TLS context ({@link KeepAliveAgents.retireIdle}) but keeps its
 * latest TLS session (about 1.5 KB), so its next connection resumes it.
 */
export class KeepAliveAgents {
  /** Most recently used last. */
  private readonly entries: Entry[] = [];
  private readonly maxAgents: number;
  private readonly retireAfterMs: number;
  private readonly idleSocketMs: number;
  private readonly maxSockets: number | undefined;

  constructor(
    o: KeepAliveAgentsOptions = {},
    private readonly now: () => number = Date.now,
  ) {
    this.maxAgents = o.maxAgents ?? 4;
    this.retireAfterMs = o.retireAfterMs ?? 60_000;
    this.idleSocketMs = o.idleSocketMs ?? IDLE_SOCKET_MS;
    this.maxSockets = o.maxSockets;
  }

  /** The keep-alive agent for connections made with `identity`. */
  agentFor(identity: TlsIdentity): https.Agent {
    const i = this.entries.findIndex((e) => sameIdentity(e.identity, identity));
    const found = this.entries[i];
    if (found !== undefined) {
      found.lastUsed = this.now();
      if (i !== this.entries.length - 1) {
        this.entries.splice(i, 1);
        this.entries.push(found);
      }
      found.agent ??= this.newAgent(found.identity, found);
      return found.agent;
    }
    if (this.entries.length >= this.maxAgents) this.retire(this.entries.shift()?.agent);
    const entry: Entry = {
      identity: identityOf(identity),
      agent: undefined,
      session: undefined,
      lastUsed: this.now(),
    };
    entry.agent = this.newAgent(entry.identity, entry);
    this.entries.push(entry);
    return entry.agent;
  }

  /** An agent with one TLS context made now from `held`, keeping its sessions in `holder`. */
  private newAgent(held: TlsIdentity, holder: SessionHolder): https.Agent {
    const secureContext = tls.createSecureContext({
      ca: held.ca,
      cert: held.cert,
      key: held.key,
      pfx: held.pfx,
      passphrase: held.passphrase,
    });
    return new ResumingAgent(
      {
        keepAlive: true,
        timeout: this.idleSocketMs,
        // The most recently used connection first: the others go idle and are closed.
        scheduling: 'lifo',
        secureContext,
        maxSockets: this.maxSockets,
        ...(held.servername !== undefined ? { servername: held.servername } : {}),
        ...(held.rejectUnauthorized !== undefined ? { rejectUnauthorized: held.rejectUnauthorized } : {}),
      },
      holder,
    );
  }

  /**
   * The keep-alive agent with the TLS options of `agent` (client-node builds a throw-away agent
   * per request), or `agent` unchanged when it is not a plain https agent (proxies, plain http,
   * the agents handed out here: a keep-alive access wrapping another uses the inner one's).
   */
  replace<T>(agent: T): T | https.Agent {
    const given: unknown = agent;
    if (!(given instanceof https.Agent) || given.constructor !== https.Agent) return agent;
    const shared = this.agentFor(given.options);
    // The throw-away agent never opened a socket; drop its (empty) pools.
    if (shared !== given) given.destroy();
    return shared;
  }

  /** How many agents are held (identities let go for being idle not counted). */
  get size(): number {
    return this.entries.filter((e) => e.agent !== undefined).length;
  }

  /** Open connections (busy and idle) over all held agents. */
  get sockets(): number {
    let n = 0;
    for (const { agent } of this.entries) {
      if (agent === undefined) continue;
      for (const list of Object.values(agent.sockets)) n += list?.length ?? 0;
      for (const list of Object.values(agent.freeSockets)) n += list?.length ?? 0;
    }
    return n;
  }

  /**
   * Lets go of the agents unused for `idleMs` with no connection open: their TLS context (native
   * memory per client identity) is made again when needed, and the identity's session is kept
   * for it. Returns how many.
   */
  retireIdle(idleMs: number): number {
    const cutoff = this.now() - idleMs;
    let retired = 0;
    for (const e of this.entries) {
      const { agent } = e;
      if (agent === undefined || e.lastUsed >= cutoff) continue;
      if (anyIn(agent.sockets, agent.freeSockets, agent.requests)) continue;
      agent.destroy();
      e.agent = undefined;
      retired++;
    }
    return retired;
  }

  /**
   * Lets every agent go: idle connections close now, busy ones after `retireAfterMs` (requests
   * are time-bounded well below that), so a request in flight is not cut off.
   */
  retireAll(): void {
    for (const e of this.entries.splice(0)) this.retire(e.agent);
  }

  private retire(agent: https.Agent | undefined): void {
    if (agent === undefined) return;
    for (const sockets of Object.values(agent.freeSockets)) for (const s of sockets ?? []) s.destroy();
    // Nothing busy or waiting: nothing to wait for (and no timer per retired agent).
    if (!anyIn(agent.sockets, agent.requests)) {
      agent.destroy();
      return;
    }
    setTimeout(() => {
      agent.destroy();
    }, this.retireAfterMs).unref();
  }
}
