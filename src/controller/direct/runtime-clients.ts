import type { KubeConfig } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { KeepAliveKubeConfig } from '../../kube/keep-alive-kubeconfig.js';

/** A runtime's kubeconfig could not be used. */
export class RuntimeKubeconfigError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'RuntimeKubeconfigError';
  }
}

interface Entry {
  readonly digest: string;
  readonly kc: KeepAliveKubeConfig;
  lastUsed: number;
}

/**
 * One client per runtime, made lazily from its kubeconfig text, rebuilt when the text changes
 * (KIM rotates kubeconfigs about every 14 h) and dropped after being idle, so 5,000 runtimes
 * never hold 5,000 clients at once unless they are all busy. A client keeps its connections
 * alive (one TLS handshake per runtime instead of one per request) and lets them go when it is
 * rebuilt or dropped.
 */
export class RuntimeClientPool {
  private readonly entries = new Map<string, Entry>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly idleMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The client for `runtimeId` built from `kubeconfig` (reused while the text is unchanged). */
  get(runtimeId: string, kubeconfig: string): KubeConfig {
    const digest = createHash('sha256').update(kubeconfig).digest('hex');
    const existing = this.entries.get(runtimeId);
    if (existing?.digest === digest) {
      existing.lastUsed = this.now();
      return existing.kc;
    }
    const kc = new KeepAliveKubeConfig();
    try {
      kc.loadFromString(kubeconfig);
    } catch (cause) {
      // The message of a YAML error may quote the text: keep it out of ours.
      throw new RuntimeKubeconfigError(`the kubeconfig of runtime ${runtimeId} cannot be parsed`, { cause });
    }
    if (!kc.getCurrentCluster())
      throw new RuntimeKubeconfigError(`the kubeconfig of runtime ${runtimeId} names no cluster`);
    existing?.kc.close();
    this.entries.set(runtimeId, { digest, kc, lastUsed: this.now() });
    return kc;
  }

  /** Forgets a runtime's client (it was deleted). */
  drop(runtimeId: string): void {
    this.entries.get(runtimeId)?.kc.close();
    this.entries.delete(runtimeId);
  }

  /** How many clients are held. */
  get size(): number {
    return this.entries.size;
  }

  /** Drops clients idle for longer than the idle time; returns how many. */
  sweep(): number {
    const cutoff = this.now() - this.idleMs;
    let dropped = 0;
    for (const [id, e] of this.entries) {
      if (e.lastUsed < cutoff) {
        e.kc.close();
        this.entries.delete(id);
        dropped++;
      }
    }
    return dropped;
  }

  /** Sweeps periodically until stop(). */
  start(periodMs = 60_000): void {
    this.sweeper ??= setInterval(() => this.sweep(), periodMs);
    this.sweeper.unref();
  }

  /** Stops sweeping and drops every client. */
  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const e of this.entries.values()) e.kc.close();
    this.entries.clear();
  }
}
