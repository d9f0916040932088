import { KubeConfig } from '@kubernetes/client-node';
import { setMaxListeners } from 'node:events';
import { parse } from 'yaml';
import { liteFromDocument, type ClusterAccess } from '../../kube/cluster-access.js';
import { KeepAliveAccess } from '../../kube/keep-alive-access.js';
import type { RequestLimits } from '../../kube/request-limits.js';
import { DEFAULT_RUNTIME_DEADLINE_MS } from './direct-mode-options.js';

/** A runtime's kubeconfig could not be used. */
export class RuntimeKubeconfigError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RuntimeKubeconfigError';
  }
}

/**
 * How long a runtime's idle connection stays open: long enough for the requests of one reconcile
 * and a drift repair right after it, short enough that a fan-out to thousands of runtimes holds
 * about one socket per runtime in flight, not one per runtime reached.
 */
export const RUNTIME_IDLE_SOCKET_MS = 5_000;
/**
 * How long a runtime's TLS context is kept unused: it costs native memory per runtime (figures in
 * docs/figures.md, fleet scale) and CPU to make again, so it is kept
 * through a burst of work (a fan-out, a drift repair and its confirmation, the next change soon
 * after) and let go in a quiet fleet. The parsed kubeconfig and the latest TLS session (a few KB)
 * are kept as long as the client, so a context made again resumes its session.
 */
export const RUNTIME_TLS_IDLE_MS = 60_000;

/**
 * The most bytes read of one answer from a runtime: twice the largest object we write there (the
 * trust bundle, at most 1 MiB), and more than the API server returns for any one object (etcd
 * keeps at most 1.5 MiB). A list is read page by page, each page under the same cap.
 */
export const RUNTIME_ANSWER_MAX_BYTES = 2 << 20;

/** What bounds the calls to runtimes (../../kube/request-limits.ts); defaults above. */
export interface RuntimeCallLimits {
  readonly maxAnswerBytes?: number;
  readonly deadlineMs?: number;
}

/**
 * Connections to one runtime at once: a reconcile's parallel reads and applies share two (a third
 * would cost a TLS handshake more than it saves in latency), and a drift repair beside a
 * reconcile has one.
 */
export const RUNTIME_MAX_SOCKETS = 2;

interface Entry {
  /** The Secret's value as stored (base64): compared by identity while the Secret is unchanged. */
  readonly data: string;
  readonly access: KeepAliveAccess;
  /** The same connections, unpaced. */
  readonly urgent: ClusterAccess;
  lastUsed: number;
}

/** Settings of a {@link RuntimeClientPool}. */
export interface RuntimeClientPoolOptions {
  /** A client unused this long is dropped (default 10 min). */
  readonly idleMs?: number;
  readonly now?: () => number;
  /** A client's TLS contexts unused this long are let go (default {@link RUNTIME_TLS_IDLE_MS}). */
  readonly tlsIdleMs?: number;
  readonly limits?: RuntimeCallLimits;
  /**
   * Awaited with each answer before its caller goes on ({@link RequestLimits.pace}), except on
   * the urgent clients ({@link RuntimeClientPool.get}).
   */
  readonly pace?: () => Promise<void>;
}

/**
 * One client per runtime, made lazily from its kubeconfig, rebuilt when the kubeconfig changes
 * (KIM rotates them about every 14 h) and dropped after being idle, so 5,000 runtimes never hold
 * 5,000 clients at once unless they are all busy. A client is the kubeconfig's server and
 * credentials (`KubeconfigLite`, or client-node's `KubeConfig` for what that does not serve,
 * such as exec plugins) behind one keep-alive agent per client identity, whose TLS context is
 * parsed once; connections close after {@link RUNTIME_IDLE_SOCKET_MS} idle, and all of them
 * when the client is rebuilt or dropped. Every call is bounded ({@link RuntimeCallLimits}): an
 * answer's size, the call's whole time, and the pool's stop.
 */
export class RuntimeClientPool {
  private readonly entries = new Map<string, Entry>();
  private sweeper: NodeJS.Timeout | undefined;
  private readonly stopping = new AbortController();
  /** Every client's: the cap on an answer, the deadline of a call, and the stop (and the pace). */
  readonly limits: RequestLimits;
  private readonly urgentLimits: RequestLimits;

  private readonly idleMs: number;
  private readonly now: () => number;
  private readonly tlsIdleMs: number;

  constructor(o: RuntimeClientPoolOptions = {}) {
    this.idleMs = o.idleMs ?? 10 * 60_000;
    this.now = o.now ?? Date.now;
    this.tlsIdleMs = o.tlsIdleMs ?? RUNTIME_TLS_IDLE_MS;
    const limits = o.limits ?? {};
    // One listener per call in flight: hundreds at once are expected, not a leak.
    setMaxListeners(0, this.stopping.signal);
    this.urgentLimits = {
      maxAnswerBytes: limits.maxAnswerBytes ?? RUNTIME_ANSWER_MAX_BYTES,
      deadlineMs: limits.deadlineMs ?? DEFAULT_RUNTIME_DEADLINE_MS,
      signal: this.stopping.signal,
    };
    this.limits = o.pace ? { ...this.urgentLimits, pace: o.pace } : this.urgentLimits;
  }

  /**
   * The client for `runtimeId` from its kubeconfig Secret's value (base64, as in the Secret's
   * `data`), reused while the value is unchanged; `urgent`: its calls are not paced (a drift
   * repair does not wait behind a fan-out's answers).
   */
  get(runtimeId: string, data: string, urgent = false): ClusterAccess {
    const existing = this.entries.get(runtimeId);
    if (existing?.data === data) {
      existing.lastUsed = this.now();
      return urgent ? existing.urgent : existing.access;
    }
    const access = new KeepAliveAccess(
      parseKubeconfig(runtimeId, Buffer.from(data, 'base64').toString('utf8')),
      {
        maxAgents: 2,
        idleSocketMs: RUNTIME_IDLE_SOCKET_MS,
        maxSockets: RUNTIME_MAX_SOCKETS,
      },
      this.limits,
    );
    existing?.access.close();
    const entry = { data, access, urgent: access.withLimits(this.urgentLimits), lastUsed: this.now() };
    this.entries.set(runtimeId, entry);
    return urgent ? entry.urgent : access;
  }

  /** Forgets a runtime's client (it was deleted). */
  drop(runtimeId: string): void {
    this.entries.get(runtimeId)?.access.close();
    this.entries.delete(runtimeId);
  }

  /** How many clients are held. */
  get size(): number {
    return this.entries.size;
  }

  /** Open connections to runtimes (busy and idle). */
  get sockets(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.access.sockets;
    return n;
  }

  /**
   * Drops clients idle for longer than the idle time, and the TLS contexts of the others idle for
   * longer than theirs; returns how many clients were dropped.
   */
  sweep(): number {
    const cutoff = this.now() - this.idleMs;
    let dropped = 0;
    for (const [id, e] of this.entries) {
      if (e.lastUsed < cutoff) {
        e.access.close();
        this.entries.delete(id);
        dropped++;
      } else e.access.retireIdle(this.tlsIdleMs);
    }
    return dropped;
  }

  /** Sweeps periodically until stop(). */
  start(periodMs = 15_000): void {
    this.sweeper ??= setInterval(() => this.sweep(), periodMs);
    this.sweeper.unref();
  }

  /**
   * Ends every call to a runtime in flight and fails every later one at once, without a request
   * (RequestAbortedError): a stopping process waits for no runtime.
   */
  abortCalls(): void {
    this.stopping.abort();
  }

  /** Stops sweeping and drops every client; calls still in flight are ended. */
  stop(): void {
    this.abortCalls();
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const e of this.entries.values()) e.access.close();
    this.entries.clear();
  }
}

/** The kubeconfig's current context as a client; the text never reaches an error message. */
function parseKubeconfig(runtimeId: string, text: string): ClusterAccess {
  let access: ClusterAccess;
  try {
    access = liteFromDocument(parse(text, { merge: true }), process.cwd()) ?? clientNode(text);
  } catch (cause) {
    // The message of a YAML error may quote the text: keep it out of ours.
    throw new RuntimeKubeconfigError(`the kubeconfig of runtime ${runtimeId} cannot be parsed`, { cause });
  }
  const cluster = access.getCurrentCluster();
  if (!cluster) throw new RuntimeKubeconfigError(`the kubeconfig of runtime ${runtimeId} names no cluster`);
  if (!cluster.server.toLowerCase().startsWith('https://'))
    throw new RuntimeKubeconfigError(
      `the kubeconfig of runtime ${runtimeId} names a server that is not https:// ` +
        `(${schemeOf(cluster.server)}); its credentials would travel in clear: refused`,
    );
  return access;
}

/** The scheme of a server URL, for a message (never the rest: it may carry credentials). */
function schemeOf(server: string): string {
  const colon = server.indexOf(':');
  return colon > 0 && colon < 16 ? `${server.slice(0, colon)}:` : 'no scheme';
}

function clientNode(text: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(text);
  return kc;
}
