/**
 * Membership of one replica in a sharded controller (the I/O shell of shard-view.ts): it holds a
 * Lease of its own through a {@link LeaderElector} (created, renewed, released on a graceful
 * stop), watches every shard Lease by label, and publishes on its own Lease the view it works
 * by. A change of membership moves this replica through explicit steps:
 *
 *   settled(view) → moving(view, next): keys `next` takes from us are no longer started, and
 *   the ones in flight finish (`drain`) → publish(next) on our Lease → confirm: our watch shows
 *   it, so every Lease we read from then on is at least as new as our write → settled(next).
 *
 * Losing the Lease (not renewed within the renew deadline) makes every key inactive at once
 * and drains; a new term starts again with no view. See shard-view.ts for why this never lets
 * two replicas work one key. A drain waits for work in flight, but a replica that stalled (a GC
 * pause, a partition) may not even notice its Lease expire: work fences each of its writes by
 * the Lease ({@link ShardMembership.fence}), so nothing is written once the others may take over.
 */
import type { Logger } from '../telemetry/logger.js';
import type { ClusterAccess } from './cluster-access.js';
import { kubeRequest } from './kube-request.js';
import { ShardLeaseCollector } from './shard-lease-gc.js';
import { ShardLeaseWatch } from './shard-lease-watch.js';
import { LeaderElector } from './leader-election.js';
import {
  DEFAULT_LEADER_ELECTION_TIMING,
  LeaderElectionConfigError,
  type LeaderElectionTiming,
} from './leader-election-timing.js';
import type { LeaseFence } from './lease-fence.js';
import {
  decideShard,
  encodeShardView,
  SHARD_VIEW_ANNOTATION,
  sameMembers,
  shardLeaseName,
  targetMembers,
  type ShardDecision,
  type ShardView,
} from './shard-view.js';

/** Settings of a {@link ShardMembership}. */
export interface ShardMembershipOptions {
  readonly access: ClusterAccess;
  readonly namespace: string;
  /** Unique per process (the Lease's holder). */
  readonly identity: string;
  /** Label (`key=value`) on every shard Lease of this controller; the Lease name's prefix is derived from it. */
  readonly label: { readonly key: string; readonly value: string };
  readonly namePrefix: string;
  readonly timing?: Partial<LeaderElectionTiming>;
  /**
   * How long before the Lease could expire for another replica the fence stops writes at the
   * latest. By default writes stop at the renew deadline, which leaves the lease duration less
   * the renew deadline (5 s with client-go's timing) for a write on its way; a larger margin
   * stops them earlier. It must leave more than the retry period of the lease duration.
   */
  readonly fenceMarginMs?: number;
  readonly logger: Logger;
  /** Resolves once no work is in flight on a key {@link ShardMembership.decide} no longer lets us work. */
  readonly drain: () => Promise<void>;
  /** Decisions may have changed (a view settled, a claim was given up, the Lease was lost). */
  readonly onChange: () => void;
}

/** A replica's membership; see the file comment. */
export class ShardMembership {
  private readonly timing: LeaderElectionTiming;
  private readonly elector: LeaderElector;
  private readonly leases: ShardLeaseWatch;
  private readonly log: Logger;
  private readonly leaseName: string;
  private active = false;
  private stopped = false;
  private view: ShardView | undefined;
  private next: ShardView | undefined;
  private others: ReadonlyMap<string, ShardView | undefined> = new Map();
  private generation = 0;
  private settling: Promise<void> | undefined;
  private again = false;
  /** After a failed step (every change of the Leases also starts one). */
  private retry: NodeJS.Timeout | undefined;
  /** Decisions of the current state (hashing every runtime on every reconcile adds up at 5,000). */
  private readonly memo = new Map<string, ShardDecision>();
  private readonly collector: ShardLeaseCollector;

  constructor(private readonly o: ShardMembershipOptions) {
    this.timing = { ...DEFAULT_LEADER_ELECTION_TIMING, ...o.timing };
    if (
      o.fenceMarginMs !== undefined &&
      !(this.timing.leaseDurationMs - o.fenceMarginMs > this.timing.retryPeriodMs)
    )
      throw new LeaderElectionConfigError(
        'the fence margin must leave more than the retry period of the lease',
      );
    this.leaseName = shardLeaseName(o.namePrefix, o.identity);
    this.log = o.logger.child({ shardLease: this.leaseName });
    this.leases = new ShardLeaseWatch({
      access: o.access,
      namespace: o.namespace,
      label: o.label,
      self: o.identity,
      ownLease: this.leaseName,
      leaseDurationMs: this.timing.leaseDurationMs,
      logger: this.log,
      onChange: () => {
        this.reconsider();
      },
    });
    this.collector = new ShardLeaseCollector({
      access: o.access,
      namespace: o.namespace,
      own: this.leaseName,
      leaseDurationMs: this.timing.leaseDurationMs,
      observations: () => (this.active ? this.leases.observations() : new Map()),
      logger: this.log,
    });
    this.elector = new LeaderElector({
      kubeConfig: o.access,
      namespace: o.namespace,
      name: this.leaseName,
      identity: o.identity,
      timing: this.timing,
      labels: { [o.label.key]: o.label.value },
      logger: o.logger,
    });
  }

  /** This replica's Lease. */
  get name(): string {
    return this.leaseName;
  }

  /** Watches the shard Leases, then stands as a member (resolves once the Leases were listed). */
  async start(): Promise<void> {
    await this.leases.start();
    this.collector.start();
    this.elector.start({
      onStartedLeading: () => {
        this.active = true;
        this.memo.clear();
        // Generations only grow on our Lease, whatever an earlier term (or process) wrote there.
        this.generation = Math.max(this.generation, this.leases.ownGeneration());
        this.log.info({}, 'shard member');
        this.leases.poke();
      },
      onStoppedLeading: async () => {
        this.active = false;
        this.view = undefined;
        this.next = undefined;
        this.memo.clear();
        this.leases.wake();
        this.o.onChange();
        await this.o.drain();
      },
    });
  }

  /** What this replica may do with `key` now. */
  decide(key: string): ShardDecision {
    if (!this.active || !this.elector.isLeader()) return { kind: 'inactive' };
    let decision = this.memo.get(key);
    if (decision === undefined) {
      const state = { self: this.o.identity, view: this.view, next: this.next, others: this.others };
      decision = decideShard(key, state);
      this.memo.set(key, decision);
    }
    return decision;
  }

  /**
   * A fence for work starting now on a key {@link decide} lets us work: it holds while this
   * replica's Lease does, in this term, with the fence margin to spare (lease-fence.ts; see
   * {@link ShardMembershipOptions.fenceMarginMs}).
   */
  fence(): LeaseFence {
    return this.elector.fence(this.o.fenceMarginMs ?? 0);
  }

  /** The members of the view this replica works by (empty while inactive). */
  members(): readonly string[] {
    return this.active ? (this.view?.members ?? []) : [];
  }

  /**
   * Stops working (drained), then gives the Lease up so the others take our keys at once;
   * `release: false` leaves it to expire, as a crash would (tests).
   */
  async stop(options: { readonly release?: boolean } = {}): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    this.collector.stop();
    await this.elector.stop(options);
    this.leases.wake();
    await this.settling;
    await this.leases.stop();
  }

  /** Liveness or a published view changed: settle again. */
  private reconsider(): void {
    if (this.stopped) return;
    void this.settle();
  }

  /** Runs steps one at a time until nothing changed meanwhile. */
  private settle(): Promise<void> {
    if (this.settling) {
      this.again = true;
      return this.settling;
    }
    this.settling = (async () => {
      do {
        this.again = false;
        try {
          await this.step();
        } catch (err) {
          this.log.warn({ err }, 'cannot publish the shard view; trying again');
          this.again = false;
          clearTimeout(this.retry);
          this.retry = setTimeout(() => {
            this.leases.poke();
          }, this.timing.retryPeriodMs);
        }
      } while (this.rerun());
    })().finally(() => {
      this.settling = undefined;
    });
    return this.settling;
  }

  private async step(): Promise<void> {
    if (!this.active || this.stopped) return;
    const live = this.leases.live();
    this.others = live;
    this.memo.clear();
    const target = targetMembers(this.o.identity, live.keys());
    // An unconfirmed publication may have landed: publish again even if the members came back.
    if (this.view !== undefined && this.next === undefined && sameMembers(this.view.members, target)) {
      this.o.onChange();
      return;
    }
    const members = target;
    this.next = { generation: this.generation + 1, members };
    this.memo.clear();
    this.o.onChange();
    await this.o.drain();
    if (this.halted()) return;
    // Counted before the write: a write that timed out may still have landed, and a retry must
    // not publish other members under the same generation.
    const next: ShardView = { generation: ++this.generation, members };
    this.next = next;
    await kubeRequest(this.o.access, {
      method: 'PATCH',
      path: `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(this.o.namespace)}/leases/${this.leaseName}`,
      body: { metadata: { annotations: { [SHARD_VIEW_ANNOTATION]: encodeShardView(next) } } },
      timeoutMs: this.timing.retryPeriodMs * 2,
      parseResponse: false,
    });
    if (!(await this.leases.confirm(next.generation, () => this.halted()))) return;
    // The claims read before our write may be older than it: read them again, now that every
    // Lease we hold is at least as new as our write (shard-view.ts).
    this.others = this.leases.live();
    this.view = next;
    this.next = undefined;
    this.memo.clear();
    this.log.info({ members: next.members.length, generation: next.generation }, 'shard view settled');
    // Membership may have moved while this step ran; the claims of the others certainly did.
    this.again = true;
  }

  // Methods, not the fields: TypeScript would keep a narrowing of them across an await.
  private halted(): boolean {
    return !this.active || this.stopped;
  }

  private rerun(): boolean {
    return this.again && !this.stopped;
  }
}
