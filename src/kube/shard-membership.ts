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
 * two replicas work one key.
 */
import type { V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../telemetry/logger.js';
import type { ClusterAccess } from './cluster-access.js';
import { kubeRequest } from './kube-request.js';
import { ShardLeaseCollector } from './shard-lease-gc.js';
import {
  DEFAULT_LEADER_ELECTION_TIMING,
  LeaderElector,
  type LeaderElectionTiming,
} from './leader-election.js';
import { leaseRecordOf } from './lease-decision.js';
import { createListerWatcher } from './list-watch.js';
import { Reflector } from './reflector.js';
import { stripManagedFields } from './reflector-options.js';
import {
  decideShard,
  encodeShardView,
  liveMembers,
  nextExpiryMs,
  parseShardView,
  SHARD_VIEW_ANNOTATION,
  sameMembers,
  shardLeaseName,
  targetMembers,
  type MemberObservation,
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
  private readonly leases: Reflector<V1Lease>;
  private readonly observations = new Map<string, MemberObservation & { rv: string }>();
  private readonly log: Logger;
  private readonly leaseName: string;
  private active = false;
  private stopped = false;
  private view: ShardView | undefined;
  private next: ShardView | undefined;
  private others: ReadonlyMap<string, ShardView | undefined> = new Map();
  private generation = 0;
  private signature = '';
  private settling: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  /** After a failed step; apart from `timer`, which every Lease event resets. */
  private retry: NodeJS.Timeout | undefined;
  private confirmWaiters: (() => void)[] = [];
  /** Decisions of the current state (hashing every runtime on every reconcile adds up at 5,000). */
  private readonly memo = new Map<string, ShardDecision>();
  private readonly collector: ShardLeaseCollector;

  constructor(private readonly o: ShardMembershipOptions) {
    this.timing = { ...DEFAULT_LEADER_ELECTION_TIMING, ...o.timing };
    this.leaseName = shardLeaseName(o.namePrefix, o.identity);
    this.log = o.logger.child({ shardLease: this.leaseName });
    this.collector = new ShardLeaseCollector({
      access: o.access,
      namespace: o.namespace,
      own: this.leaseName,
      leaseDurationMs: this.timing.leaseDurationMs,
      observations: () => (this.active ? this.observations : new Map()),
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
    this.leases = new Reflector<V1Lease>({
      name: 'shard leases',
      listerWatcher: createListerWatcher<V1Lease>(
        o.access,
        `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(o.namespace)}/leases`,
      ),
      labelSelector: `${o.label.key}=${o.label.value}`,
      transform: stripManagedFields,
      logger: this.log,
      handlers: {
        onAdd: (l) => {
          this.observe(l);
        },
        onUpdate: (_old, l) => {
          this.observe(l);
        },
        onDelete: (l) => {
          this.observations.delete(l.metadata?.name ?? '');
          this.reconsider();
        },
      },
    });
  }

  /** This replica's Lease. */
  get name(): string {
    return this.leaseName;
  }

  /** Watches the shard Leases, then stands as a member (resolves once the Leases were listed). */
  async start(): Promise<void> {
    this.leases.start();
    await this.leases.waitForSync();
    this.collector.start();
    this.elector.start({
      onStartedLeading: () => {
        this.active = true;
        this.memo.clear();
        // Generations only grow on our Lease, whatever an earlier term (or process) wrote there.
        const own = this.observations.get(this.leaseName)?.view?.generation ?? 0;
        this.generation = Math.max(this.generation, own);
        this.log.info({}, 'shard member');
        this.reconsider(true);
      },
      onStoppedLeading: async () => {
        this.active = false;
        this.view = undefined;
        this.next = undefined;
        this.memo.clear();
        this.wakeConfirmWaiters();
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
    clearTimeout(this.timer);
    clearTimeout(this.retry);
    this.collector.stop();
    await this.elector.stop(options);
    this.wakeConfirmWaiters();
    await this.settling;
    await this.leases.stop();
  }

  private observe(lease: V1Lease): void {
    const name = lease.metadata?.name ?? '';
    const rv = lease.metadata?.resourceVersion ?? '';
    const known = this.observations.get(name);
    // Only a new resourceVersion restarts the expiry count (as leader election's candidates).
    const observedAtMs = known?.rv === rv ? known.observedAtMs : performance.now();
    const view = parseShardView(lease.metadata?.annotations?.[SHARD_VIEW_ANNOTATION]);
    this.observations.set(name, { record: leaseRecordOf(lease), observedAtMs, view, rv });
    if (name === this.leaseName) this.wakeConfirmWaiters();
    this.reconsider();
  }

  /** Re-evaluates when liveness or a published view changed (renewals alone change neither). */
  private reconsider(force = false): void {
    if (this.stopped) return;
    const now = performance.now();
    const live = liveMembers(this.observations.values(), this.o.identity, now, this.timing.leaseDurationMs);
    const signature = [...live]
      .map(([m, v]) => `${m}:${v?.generation ?? '-'}:${v?.members.join(',') ?? ''}`)
      .sort()
      .join('|');
    clearTimeout(this.timer);
    const at = nextExpiryMs(this.observations.values(), this.o.identity, now, this.timing.leaseDurationMs);
    if (at !== undefined)
      this.timer = setTimeout(
        () => {
          this.reconsider();
        },
        Math.ceil(at - now) + 1,
      );
    if (!force && signature === this.signature) return;
    this.signature = signature;
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
            this.reconsider(true);
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
    const live = liveMembers(
      this.observations.values(),
      this.o.identity,
      performance.now(),
      this.timing.leaseDurationMs,
    );
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
    if (!(await this.confirmed(next.generation))) return;
    // The claims read before our write may be older than it: read them again, now that every
    // Lease we hold is at least as new as our write (shard-view.ts).
    this.others = liveMembers(
      this.observations.values(),
      this.o.identity,
      performance.now(),
      this.timing.leaseDurationMs,
    );
    this.view = next;
    this.next = undefined;
    this.memo.clear();
    this.log.info({ members: next.members.length, generation: next.generation }, 'shard view settled');
    // Membership may have moved while this step ran; the claims of the others certainly did.
    this.again = true;
  }

  /** Waits until our watch shows our Lease with `generation` (false: stopped, inactive or too late). */
  private async confirmed(generation: number): Promise<boolean> {
    const deadline = performance.now() + this.timing.leaseDurationMs;
    for (;;) {
      if (!this.active || this.stopped) return false;
      const own = this.observations.get(this.leaseName);
      if ((own?.view?.generation ?? 0) >= generation) return true;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`shard view ${generation} not seen on the watch in time`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.confirmWaiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  // Methods, not the fields: TypeScript would keep a narrowing of them across an await.
  private halted(): boolean {
    return !this.active || this.stopped;
  }

  private rerun(): boolean {
    return this.again && !this.stopped;
  }

  private wakeConfirmWaiters(): void {
    const waiters = this.confirmWaiters;
    this.confirmWaiters = [];
    for (const w of waiters) w();
  }
}
