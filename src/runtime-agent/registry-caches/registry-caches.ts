/**
 * Customers' registry caches on this runtime (docs/registry-caches.md): every `intervalMs`, and
 * at once when the config changes, discovery says whether the runtime serves RegistryCacheConfig
 * (../../kube/api-discovery.ts), and where it does its objects are listed page by page, bounded in
 * bytes (../../kube/pager.ts), each page reduced to hosts as it arrives (./cache-hosts.ts).
 *
 * Every replica looks, not the agent's leader alone: admission asks every replica which hosts to
 * leave to their cache (config `registryCaches: "leave"`), and two replicas must answer alike. The
 * agent's leader writes the report into the status ConfigMap under its own field manager
 * ({@link RegistryCaches.leaderPart}), when it changed or its term began.
 */
import type { Logger } from 'pino';
import {
  DEFAULT_REGISTRY_CACHE_MODE,
  REGISTRY_CACHE_API,
  REGISTRY_CACHES_FIELD_MANAGER,
  REGISTRY_CACHES_KEY,
  writeRegistryCaches,
  type RegistryCachesReport,
} from '../../api/registry-caches.js';
import type { WebhookConfig } from '../../api/webhook-config.js';
import { cachedSourcesOf } from '../../image/cached-registries.js';
import { abortableSleep } from '../../kube/abortable-sleep.js';
import { discoverApi, discoveryGet } from '../../kube/api-discovery.js';
import { applyConfigMapData } from '../../kube/apply.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import { forEachPage } from '../../kube/pager.js';
import { Listeners } from '../../process/listeners.js';
import { part, type Part } from '../../process/part-group.js';
import type { Leadership, LeaderPart } from '../runtime-agent.js';
import { CachedHostTally, cachesReportOf, NO_CACHED_HOSTS, type CachedHosts } from './cache-hosts.js';

/** Default time between two looks. */
export const DEFAULT_REGISTRY_CACHE_INTERVAL_MS = 60_000;
/** Objects per page of the list (each page also bounded in bytes). */
const PAGE_SIZE = 100;

/** Settings of {@link RegistryCaches}. */
export interface RegistryCachesOptions {
  readonly access: ClusterAccess;
  readonly logger: Logger;
  /** The configuration in force (its overrides and `registryCaches`). */
  readonly config: () => WebhookConfig | undefined;
  /** Where the report goes (direct mode); undefined: logs only. */
  readonly statusConfigMap: { readonly namespace: string; readonly name: string } | undefined;
  /** Time between two looks (default {@link DEFAULT_REGISTRY_CACHE_INTERVAL_MS}). */
  readonly intervalMs?: number;
  /** Clock of the report's time (tests). */
  readonly now?: () => Date;
}

/** The runtime's registry caches, kept current (see the file comment). */
export class RegistryCaches {
  private readonly log: Logger;
  private found: CachedHosts | undefined;
  private api: string | undefined;
  private leadership: Leadership | undefined;
  private written: string | undefined;
  private wake = new AbortController();
  private readonly lookListeners = new Listeners<[]>();

  constructor(private readonly o: RegistryCachesOptions) {
    this.log = o.logger.child({ part: 'registry-caches' });
  }

  /** Canonical hosts with a ready customer cache; none before the first look ended. */
  cachedRegistries(): ReadonlySet<string> {
    return (this.found ?? NO_CACHED_HOSTS).hosts;
  }

  /** Whether a look ended (successfully or not): admission then answers as the runtime is. */
  looked(): boolean {
    return this.found !== undefined;
  }

  /** The report as it stands (tests, debugging); undefined before the first look. */
  report(): RegistryCachesReport | undefined {
    const found = this.found;
    if (found === undefined) return undefined;
    const config = this.o.config();
    return cachesReportOf({
      api: this.api,
      found,
      rewritten: config === undefined ? [] : cachedSourcesOf(config.overrides, found.hosts),
      mode: config?.registryCaches ?? DEFAULT_REGISTRY_CACHE_MODE,
      at: this.o.now?.() ?? new Date(),
    });
  }

  /** Calls `listener` after each look ({@link cachedRegistries} may have changed). */
  onLook(listener: () => void): void {
    this.lookListeners.add(listener);
  }

  /** Look again now (the config changed: what is rewritten may have). */
  refresh(): void {
    this.wake.abort();
  }

  /** The looks of this replica, for as long as the process runs. */
  readonly part: Part = ((): Part => {
    const lifetime = new AbortController();
    let running: Promise<void> = Promise.resolve();
    return part('registry caches', {
      start: () => {
        running = this.run(lifetime.signal);
      },
      stop: async () => {
        lifetime.abort();
        this.wake.abort();
        await running;
      },
    });
  })();

  /** The report's writer of one term of the agent's leadership. */
  readonly leaderPart: LeaderPart = (leadership) =>
    part('registry-caches report', {
      start: () => {
        this.leadership = leadership;
        this.written = undefined;
        this.refresh();
      },
      stop: () => {
        if (this.leadership === leadership) this.leadership = undefined;
      },
    });

  private async run(signal: AbortSignal): Promise<void> {
    const interval = this.o.intervalMs ?? DEFAULT_REGISTRY_CACHE_INTERVAL_MS;
    while (!signal.aborted) {
      this.wake = new AbortController();
      try {
        await this.look(signal);
      } catch (err) {
        if (stopped(signal)) return;
        // A failed look keeps what the last one found: admission does not flip on a hiccup.
        this.found ??= NO_CACHED_HOSTS;
        this.log.warn({ err }, 'cannot read the registry caches; trying again at the next interval');
      }
      this.lookListeners.emit();
      await this.publish();
      await abortableSleep(interval, AbortSignal.any([signal, this.wake.signal]));
    }
  }

  /** One look: discovery, then the objects page by page. */
  private async look(signal: AbortSignal): Promise<void> {
    const api = await discoverApi(REGISTRY_CACHE_API, discoveryGet(this.o.access));
    if (!api.served) {
      this.api = undefined;
      this.found = NO_CACHED_HOSTS;
      return;
    }
    const tally = new CachedHostTally();
    await forEachPage(
      new KubeListWatch<unknown>(this.o.access, api.path),
      { pageSize: PAGE_SIZE },
      signal,
      (items, restart) => {
        if (restart) tally.reset();
        for (const item of items) tally.add(item);
      },
    );
    this.api = api.apiVersion;
    this.found = tally.result();
  }

  /** Logs what is bypassed, and writes the report where this replica leads and it changed. */
  private async publish(): Promise<void> {
    const report = this.report();
    if (report === undefined) return;
    // The time alone is no change.
    const text = JSON.stringify({ ...report, at: '' });
    if (text === this.written) return;
    if (report.rewritten.length > 0)
      this.log.warn(
        { hosts: report.rewritten, mode: report.mode },
        report.mode === 'leave'
          ? 'hosts with a customer registry cache are left to the cache (registryCaches: leave)'
          : 'the overrides rewrite hosts that have a customer registry cache: the cache is bypassed',
      );
    const target = this.o.statusConfigMap;
    if (target === undefined || this.leadership?.isLeader() !== true) {
      this.written = text;
      return;
    }
    try {
      await applyConfigMapData(
        this.o.access,
        target,
        { [REGISTRY_CACHES_KEY]: writeRegistryCaches(report) },
        { fieldManager: REGISTRY_CACHES_FIELD_MANAGER },
      );
      this.written = text;
    } catch (err) {
      this.log.warn({ err }, 'cannot write the registry-cache report; written with the next look');
    }
  }
}

/** Whether the lifetime ended (a function: the loop's own check narrows `aborted` to false). */
const stopped = (signal: AbortSignal): boolean => signal.aborted;
