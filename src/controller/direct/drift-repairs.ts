/**
 * Drift repairs in direct mode. A report (from this replica's listener, or relayed by another
 * replica through the KCP) for a runtime this replica works re-applies the set at once, on a
 * queue of its own so it never waits behind the runtime's full reconcile: only the reported
 * objects when the report names them (one write, not the whole set), the whole set when it came
 * relayed or names a Namespace (whose removal takes what is in it along); a forced full reconcile
 * follows a moment after the runtime's last report (repair-confirmations.ts). A report naming the
 * webhook's status ConfigMap is no drift: the webhook wrote a new finding there (its trust-bundle
 * capability, docs/trust-bundle-api.md), so nothing is repaired and only the forced full reconcile
 * follows, which reads the report. A report for a runtime another replica works is relayed to it
 * (drift-relay.ts). Each repair is measured from the time its report was received
 * (repair-latency.ts), relayed or not.
 */
import type { Registry } from 'prom-client';
import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import { RUNTIME_NAMESPACE } from '../../api/runtime-names.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../api/webhook-status.js';
import type { LeaseFence } from '../../kube/lease-fence.js';
import type { ShardDecision } from '../../kube/shard-view.js';
import { WorkQueue } from '../../kube/work-queue.js';
import { PrometheusWorkQueueMetrics } from '../../kube/workqueue-metrics.js';
import type { BootstrapperReconciler } from './bootstrapper-reconciler.js';
import { relayedReportAt } from './drift-relay.js';
import { RepairConfirmations } from './repair-confirmations.js';
import type { RepairLatency } from './repair-latency.js';
import { setObjectKey } from './set-writes.js';

/** The {@link setObjectKey} of the webhook's status ConfigMap on a runtime (../../api/webhook-status.ts). */
export const WEBHOOK_REPORT_OBJECT = setObjectKey({
  kind: 'ConfigMap',
  metadata: { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP },
});

/**
 * What a drift report of `object` (its {@link setObjectKey}; undefined: not known) asks of its
 * runtime (pure): `look`, only a forced full pass, when it names the webhook's status ConfigMap
 * (the webhook tells that it wrote a new finding there; the pass reads it); `repair` otherwise.
 */
export function reportAsks(object: string | undefined): 'repair' | 'look' {
  return object === WEBHOOK_REPORT_OBJECT ? 'look' : 'repair';
}

/** What {@link DriftRepairs} needs of direct mode. */
export interface DriftRepairsOptions {
  readonly reconciler: Pick<BootstrapperReconciler, 'repairSet' | 'force'>;
  /** The full reconciles' queue (the confirmation after a repair). */
  readonly queue: Pick<WorkQueue, 'add'>;
  /** The RuntimeBootstrapper key of a runtime (an index: a report must not scan every CR). */
  readonly keyOfRuntime: (runtimeId: string) => string | undefined;
  /** Runs work on a runtime if this replica works it now, fenced by its Lease. */
  readonly run: (key: string, work: (fence: LeaseFence) => Promise<void>) => Promise<unknown>;
  /** Across replicas: who works a runtime, and the relay to the one that does; undefined without sharding. */
  readonly shard?: {
    decide(runtimeId: string): ShardDecision;
    relayDrift(key: string, receivedAt: number): void;
  };
  readonly registry: Registry;
  /**
   * Each repair's time from its report (made before the reconciler and these repairs: a full
   * reconcile's end, told to it by the reconciler, ends the repairs of its runtime too).
   */
  readonly latency: RepairLatency;
  readonly concurrency: number;
  readonly confirmDelayMs: number;
}

/** See the file comment. */
export class DriftRepairs {
  private readonly queue: WorkQueue;
  private readonly confirmations: RepairConfirmations;
  private readonly latency: RepairLatency;
  private running: Promise<void> | undefined;
  /**
   * Per RuntimeBootstrapper key, the objects reported since its last repair began
   * (`kind/namespace/name`); `all`: the whole set.
   */
  private readonly reported = new Map<string, Set<string> | 'all'>();

  constructor(private readonly o: DriftRepairsOptions) {
    this.queue = new WorkQueue({ name: 'drift-repair', metrics: new PrometheusWorkQueueMetrics(o.registry) });
    this.latency = o.latency;
    // The drift webhook reports a write before the API server stores it, so an immediate repair
    // could land first and be overwritten by the tamper. A forced full reconcile therefore
    // follows a moment after the runtime's last report: it re-applies the set (and the webhook's
    // own objects) after the tamper is stored, and it stays out of the way of the fast path.
    this.confirmations = new RepairConfirmations(o.confirmDelayMs, (key) => {
      o.reconciler.force(key);
      o.queue.add(key);
    });
  }

  /** Starts repairing. */
  start(): void {
    this.running = this.queue.start(
      async (key) => {
        const reported = this.reported.get(key);
        this.reported.delete(key);
        await this.o.run(key, async (fence) => {
          const only = reported === 'all' ? undefined : reported;
          if (await this.o.reconciler.repairSet(key, fence, only)) this.latency.repaired(key, true);
        });
      },
      { concurrency: this.o.concurrency },
    );
  }

  /**
   * A drift report for `runtimeId`, received at `receivedAt` (epoch ms), of `object` (its
   * `kind/namespace/name`; undefined: unknown, the whole set is repaired): repaired here if this
   * replica works the runtime, relayed to the replica that does otherwise. One naming the
   * webhook's status ConfigMap ({@link reportAsks}) only forces the runtime's full pass.
   */
  report(runtimeId: string, receivedAt: number, object?: string): void {
    const key = this.o.keyOfRuntime(runtimeId);
    if (key === undefined) return;
    const decision = this.o.shard?.decide(runtimeId).kind ?? 'work';
    // Ours but still the previous owner's: taking it over reconciles it fully anyway.
    if (decision === 'wait') return;
    if (decision !== 'work') {
      this.o.shard?.relayDrift(key, receivedAt);
      return;
    }
    if (reportAsks(object) === 'look') {
      // Nothing of the set to write and no repair to measure. The runtime (whose client
      // certificate named it) gets one forced pass, coalesced and bounded like any report's
      // confirmation, behind the listener's per-runtime rate limit.
      this.confirmations.event(key);
      return;
    }
    this.latency.reported(key, receivedAt);
    this.note(key, object);
    this.queue.add(key);
    this.confirmations.event(key);
  }

  private note(key: string, object: string | undefined): void {
    const seen = this.reported.get(key);
    if (seen === 'all') return;
    if (object === undefined || object.startsWith('Namespace/')) {
      this.reported.set(key, 'all');
      return;
    }
    if (seen === undefined) this.reported.set(key, new Set([object]));
    else seen.add(object);
  }

  /** An update of a RuntimeBootstrapper: a report another replica relayed is repaired if ours. */
  updated(old: RuntimeBootstrapper, next: RuntimeBootstrapper): void {
    const at = relayedReportAt(old, next, Date.now());
    if (at === undefined) return;
    // Relayed to whoever works it; never relayed again from here.
    if (this.o.shard?.decide(next.spec.runtimeID).kind !== 'work') return;
    this.report(next.spec.runtimeID, at);
  }

  /** Stops: pending confirmations are dropped, repairs under way finish. */
  async stop(): Promise<void> {
    this.confirmations.stop();
    await this.queue.shutDownWithDrain();
    await this.running;
  }
}
