/**
 * The escaped-Pod count and repair (docs/runtime-agent.md, DESIGN §13): a part of the runtime
 * agent's leader. Every `intervalMs` it lists the running Pods (field selector `status.phase=
 * Running`, paged and bounded in bytes by ../../kube/pager.ts: each page is judged as it arrives
 * and dropped, so memory holds one page and the counts), judges each with ./escape-decision.ts,
 * sets the metrics, writes the report into the status ConfigMap under its own field manager, and,
 * with the repair on, restarts the owners of escaped Pods (./escaped-repair.ts) and counts again.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import {
  ESCAPED_FIELD_MANAGER,
  ESCAPED_PODS_KEY,
  ESCAPE_REASONS,
  writeEscaped,
  type EscapedPodsReport,
} from '../../api/escaped-pods.js';
import type { TrustBundleMount } from '../../api/trust-bundle-capability.js';
import type { WebhookConfig } from '../../api/webhook-config.js';
import { abortableSleep } from '../../kube/abortable-sleep.js';
import { applyConfigMapData } from '../../kube/apply.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import { forEachPage } from '../../kube/pager.js';
import type { Pod } from '../../mutation/pod.js';
import { part, type Part } from '../../process/part-group.js';
import type { OwnerRef } from '../trust-restart/pod-facts.js';
import { restartCalls, type RestartCalls } from '../trust-restart/restart-calls.js';
import type { Leadership } from '../runtime-agent.js';
import { escapeReasons, isCounted } from './escape-decision.js';
import { createEscapedMetrics, type EscapedMetrics } from './escaped-metrics.js';
import { repairOwners } from './escaped-repair.js';
import { EscapedTally, type EscapedCount } from './escaped-tally.js';

/** Default time between two counts. */
export const DEFAULT_ESCAPED_INTERVAL_MS = 5 * 60_000;
/** Pods per page of the count's list (each page also bounded in bytes). */
const PAGE_SIZE = 250;

/** Settings of the escaped-Pod part. */
export interface EscapedPodsOptions {
  readonly access: ClusterAccess;
  readonly registry: Registry;
  readonly logger: Logger;
  /**
   * The configuration in force as admission applies it on the runtime (../../mutation/pipeline.ts
   * `configOnRuntime`; undefined: none yet, nothing is counted).
   */
  readonly config: () => WebhookConfig | undefined;
  /** The set version in force. */
  readonly revision: () => string | undefined;
  /** The webhook's namespace: its own Pods there are not counted (../../render/webhook-registration.ts). */
  readonly webhookNamespace: string;
  /** The feature annotations of a Namespace (the webhook's namespace cache). */
  readonly namespaceAnnotations: (name: string) => Readonly<Record<string, string>> | undefined;
  /** Whether the runtime takes the trust-bundle mount now. */
  readonly trustBundleMount: () => TrustBundleMount;
  /** Where the report goes (direct mode); undefined: metrics and logs only. */
  readonly statusConfigMap: { readonly namespace: string; readonly name: string } | undefined;
  /** Time between two counts (default {@link DEFAULT_ESCAPED_INTERVAL_MS}). */
  readonly intervalMs?: number;
  /** Restart the owners of escaped Pods (`--repair-escaped`); otherwise only count. */
  readonly repair?: {
    /** A restart not rolled out after this is reported and the next goes on (the restarter's). */
    readonly deadlineMs: number;
    readonly pollMs?: number;
  };
  /** Replaces the restart calls (tests). */
  readonly calls?: RestartCalls;
  /** Clock of the report's time (tests). */
  readonly now?: () => Date;
}

/** What the part keeps across terms (its metrics, the last count). */
export class EscapedPods {
  private readonly metrics: EscapedMetrics;
  private readonly log: Logger;
  private last: EscapedPodsReport | undefined;
  private restarted = 0;

  constructor(private readonly o: EscapedPodsOptions) {
    this.metrics = createEscapedMetrics(o.registry);
    this.log = o.logger.child({ part: 'escaped-pods' });
  }

  /** The last report this replica made (tests, debugging). */
  lastReport(): EscapedPodsReport | undefined {
    return this.last;
  }

  /** The part of one term of the agent's leadership. */
  readonly leaderPart = (leadership: Leadership): Part => {
    const lifetime = new AbortController();
    let running: Promise<void> = Promise.resolve();
    return part('escaped-pods', {
      start: () => {
        running = this.run(leadership, lifetime.signal).catch((err: unknown) => {
          if (!lifetime.signal.aborted) this.log.error({ err }, 'the escaped-Pod count stopped on an error');
        });
      },
      stop: async () => {
        lifetime.abort();
        await running;
        // Only the leader's figures count: a replica that stops leading says 0.
        this.metrics.pods.set(0);
        this.metrics.bare.set(0);
        this.metrics.byReason.reset();
      },
    });
  };

  private async run(leadership: Leadership, signal: AbortSignal): Promise<void> {
    const interval = this.o.intervalMs ?? DEFAULT_ESCAPED_INTERVAL_MS;
    const calls = this.o.calls ?? restartCalls(this.o.access);
    while (!signal.aborted) {
      const config = this.o.config();
      if (config !== undefined && leadership.isLeader()) {
        let count: EscapedCount | undefined;
        try {
          count = await this.count(config, signal);
          this.metrics.counts.inc({ result: 'ok' });
        } catch (err) {
          // Stopped mid-list: the loop's condition ends it.
          if (lifetimeEnded(signal)) continue;
          this.metrics.counts.inc({ result: 'error' });
          this.log.warn({ err }, 'cannot count the escaped Pods; trying again at the next interval');
        }
        if (count !== undefined) {
          await this.publish(count, leadership);
          const repair = this.o.repair;
          if (repair !== undefined && count.owners.length > 0) {
            const restartedBefore = this.restarted;
            await repairOwners(count.owners, {
              calls,
              token: tokenOf(this.o.revision(), config),
              deadlineMs: repair.deadlineMs,
              pollMs: repair.pollMs,
              logger: this.log,
              signal,
              isActive: () => leadership.isLeader(),
              onOutcome: (outcome, kind) => {
                this.metrics.repairs.inc({ outcome, kind });
                if (outcome === 'restarted') this.restarted++;
              },
            });
            // Something restarted: count again at once, so the report shows the repair.
            if (this.restarted > restartedBefore) continue;
          }
        }
      }
      await abortableSleep(interval, signal);
    }
  }

  /** One count: the running Pods, page by page. */
  private async count(config: WebhookConfig, signal: AbortSignal): Promise<EscapedCount> {
    const tally = new EscapedTally();
    const context = {
      config,
      revision: this.o.revision(),
      trustBundleMount: this.o.trustBundleMount(),
    };
    await forEachPage(
      new KubeListWatch<Pod>(this.o.access, '/api/v1/pods'),
      { pageSize: PAGE_SIZE, fieldSelector: 'status.phase=Running' },
      signal,
      (pods, restart) => {
        if (restart) tally.reset();
        for (const pod of pods) {
          const namespace = pod.metadata?.namespace ?? '';
          if (!isCounted(pod, this.o.webhookNamespace)) continue;
          const reasons = escapeReasons(pod, {
            ...context,
            namespaceAnnotations: this.o.namespaceAnnotations(namespace),
          });
          tally.add({ namespace, owner: controllerOf(pod) }, reasons);
        }
      },
    );
    return tally.result();
  }

  /** Metrics, log and the report of one count. */
  private async publish(count: EscapedCount, leadership: Leadership): Promise<void> {
    this.metrics.pods.set(count.pods);
    this.metrics.bare.set(count.bare);
    for (const reason of ESCAPE_REASONS) this.metrics.byReason.set({ reason }, count.reasons[reason] ?? 0);
    const report: EscapedPodsReport = {
      pods: count.pods,
      reasons: count.reasons,
      bare: count.bare,
      scanned: count.scanned,
      repair: this.o.repair !== undefined,
      restarted: this.restarted,
      revision: this.o.revision(),
      at: (this.o.now?.() ?? new Date()).toISOString(),
    };
    this.last = report;
    if (count.pods > 0)
      this.log.warn(
        { pods: count.pods, reasons: count.reasons, bare: count.bare, ownersLeftOut: count.ownersLeftOut },
        'running Pods do not follow the set in force (admitted without the webhook)',
      );
    const target = this.o.statusConfigMap;
    if (target === undefined || !leadership.isLeader()) return;
    try {
      await applyConfigMapData(
        this.o.access,
        target,
        { [ESCAPED_PODS_KEY]: writeEscaped(report) },
        { fieldManager: ESCAPED_FIELD_MANAGER },
      );
    } catch (err) {
      this.log.warn({ err }, 'cannot write the escaped-Pod report; written with the next count');
    }
  }
}

/** Whether the term ended (a function: the loop's own check narrows `aborted` to false). */
const lifetimeEnded = (signal: AbortSignal): boolean => signal.aborted;

/** The Pod's controlling owner, if any. */
function controllerOf(pod: Pod): OwnerRef | undefined {
  const ref = pod.metadata?.ownerReferences?.find((r) => r.controller === true);
  return ref === undefined
    ? undefined
    : { apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, uid: ref.uid };
}

/**
 * The value the repair writes on a template: the set version, or where the config is no set of
 * the KCP's, a digest of the config (a new config may restart an owner once more).
 */
function tokenOf(revision: string | undefined, config: WebhookConfig): string {
  if (revision !== undefined) return revision;
  return `config-${createHash('sha256').update(JSON.stringify(config)).digest('hex').slice(0, 16)}`;
}
