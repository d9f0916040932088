/**
 * Direct mode across replicas: this replica works only the runtimes its shard membership gives
 * it (src/kube/shard-membership.ts). Its queue admits only those ({@link ShardedWork.admits}) and
 * takes the keys to queue again from it ({@link ShardedWork.requeue});
 * every reconcile and drift repair runs through {@link ShardedWork.run}, which checks again (the
 * decision may change while a key waits) and keeps count of what is in flight, so a change of
 * membership can wait for the runtimes leaving us to finish before our Lease says we gave them
 * up. Runtimes that become ours are queued at once.
 *
 * The caches stay whole (the API server cannot select by hash, a runtime moving here must be
 * known at once, and the drift listener checks any runtime's certificate); what costs per
 * runtime (clients, connections, reconcile state) exists only for the runtimes worked here.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { KeepAliveAccess } from '../../kube/keep-alive-access.js';
import type { ReadonlyStore } from '../../kube/store.js';
import type { LeaderElectionTiming } from '../../kube/leader-election-timing.js';
import { UNFENCED, type LeaseFence } from '../../kube/lease-fence.js';
import { counterOn, gaugeOn } from '../../telemetry/prom-metrics.js';
import { ShardMembership } from '../../kube/shard-membership.js';
import type { ShardDecision } from '../../kube/shard-view.js';
import { Listeners } from '../../process/listeners.js';
import { DriftRelay } from './drift-relay.js';

/** Label of every shard Lease of the controller (replicas list and watch them by it). */
export const SHARD_LEASE_LABEL = { key: 'rt-bootstrapper.kyma-project.io/shard-of', value: 'controller' };
/** Prefix of a replica's shard Lease name (the rest is made from its identity). */
export const SHARD_LEASE_PREFIX = 'rt-bootstrapper-controller-shard-';

/** Sharding settings of direct mode (off when direct mode gets none). */
export interface DirectShardSettings {
  /** Unique per process: the holder of this replica's Lease. */
  readonly identity: string;
  /** Of this replica's Lease (default client-go's 15 s, 10 s, 2 s). */
  readonly timing?: Partial<LeaderElectionTiming>;
  /** See ShardMembershipOptions.fenceMarginMs (default: writes stop at the renew deadline). */
  readonly fenceMarginMs?: number;
  /** Test hook: told as this replica starts and ends work on a runtime (to audit that none is worked twice at once). */
  readonly onWork?: (runtimeId: string, phase: 'start' | 'end') => void;
}

/** What {@link ShardedWork} reads of direct mode. */
export interface ShardedWorkOptions {
  /**
   * The KCP for the Leases: connections of their own (a renewal queued behind a fan-out's status
   * writes would come late, and a late renewal fences all of this replica's work).
   */
  readonly kubeConfig: ClusterAccess;
  /** The KCP for relayed drift reports (direct mode's pool). */
  readonly kcp: ClusterAccess;
  readonly namespace: string;
  readonly settings: DirectShardSettings;
  readonly logger: Logger;
  readonly registry: Registry;
  readonly bootstrappers: ReadonlyStore<RuntimeBootstrapper>;
}

/** See the file comment. */
export class ShardedWork {
  private readonly membership: ShardMembership;
  private readonly inFlight = new Map<string, number>();
  private ended: (() => void)[] = [];
  private owned = new Set<string>();
  private readonly gauges: { members: (n: number) => void; owned: (n: number) => void };
  private readonly moves: (direction: 'gained' | 'lost', n: number) => void;
  private readonly refresh: NodeJS.Timeout;
  private readonly relay: DriftRelay;
  private readonly leaseAccess: KeepAliveAccess;
  /**
   * Keys refused while this replica could not work their runtime but no other replica took it
   * (starting, a renewal late, a handover pending): queued once the runtime is workable again.
   */
  private readonly deferred = new Set<string>();
  private readonly membershipChanges = new Listeners<[]>();
  /**
   * Keys to queue again (the queue registers here as it is built, and admits what is ours): the
   * runtimes that became ours, and the keys refused while no replica could work them.
   */
  readonly requeue = new Listeners<[key: string]>();

  constructor(private readonly o: ShardedWorkOptions) {
    const members = gaugeOn(o.registry, {
      name: 'rtb_shard_members',
      help: 'Live controller replicas in the shard view this replica works by (0 while it works none).',
      labelNames: [],
    });
    const owned = gaugeOn(o.registry, {
      name: 'rtb_shard_owned_runtimes',
      help: 'Runtimes this replica works now.',
      labelNames: [],
    });
    const moves = counterOn(o.registry, {
      name: 'rtb_shard_ownership_moves_total',
      help: 'Runtimes that became this replica’s to work (gained) or stopped being so (lost).',
      labelNames: ['direction'],
    });
    this.gauges = {
      members: (n) => {
        members.set(n);
      },
      owned: (n) => {
        owned.set(n);
      },
    };
    this.moves = (direction, n) => {
      if (n > 0) moves.inc({ direction }, n);
    };
    this.relay = new DriftRelay(o.kcp, o.logger);
    this.leaseAccess = new KeepAliveAccess(o.kubeConfig, { maxSockets: 4 });
    this.membership = new ShardMembership({
      access: this.leaseAccess,
      namespace: o.namespace,
      identity: o.settings.identity,
      label: SHARD_LEASE_LABEL,
      namePrefix: SHARD_LEASE_PREFIX,
      timing: o.settings.timing,
      fenceMarginMs: o.settings.fenceMarginMs,
      logger: o.logger.child({ part: 'shard' }),
      drain: () => this.drain(),
      onChange: () => {
        this.recount(true);
      },
    });
    // Runtimes come and go between membership changes: keep the gauge current.
    this.refresh = setInterval(() => {
      this.recount(false);
    }, 2_000);
    this.refresh.unref();
  }

  /** This replica's Lease name. */
  get leaseName(): string {
    return this.membership.name;
  }

  /** Joins (resolves once the shard Leases were listed; the runtimes follow as the view settles). */
  start(): Promise<void> {
    return this.membership.start();
  }

  /** What this replica may do with a runtime now. */
  decide(runtimeId: string): ShardDecision {
    return this.membership.decide(runtimeId);
  }

  /** Whether `key` may be queued: its runtime is ours to work now (or it is gone from the cache). */
  admits(key: string): boolean {
    const runtimeId = this.o.bootstrappers.get(key)?.spec.runtimeID;
    return runtimeId === undefined || this.workable(key, runtimeId);
  }

  /** Hands a drift report (received at epoch ms) for a runtime another replica works to that replica (drift-relay.ts). */
  relayDrift(key: string, receivedAt: number): void {
    this.relay.relay(key, receivedAt);
  }

  /**
   * Runs `work` if the runtime of `key` is ours to work now, with a fence of this replica's Lease
   * for each write it makes; otherwise does nothing.
   */
  async run<T>(key: string, work: (fence: LeaseFence) => Promise<T>): Promise<T | undefined> {
    const runtimeId = this.o.bootstrappers.get(key)?.spec.runtimeID;
    // A key gone from the cache touches no runtime: its reconcile only forgets it.
    if (runtimeId === undefined) return work(UNFENCED);
    if (!this.workable(key, runtimeId)) return undefined;
    return this.track(runtimeId, work);
  }

  /**
   * Runs `work` for a runtime that may have no RuntimeBootstrapper yet (creating one) if it is
   * ours now; resolves the decision it ran (`work`) or did not run by.
   */
  async runOn(runtimeId: string, work: (fence: LeaseFence) => Promise<void>): Promise<ShardDecision['kind']> {
    const kind = this.membership.decide(runtimeId).kind;
    if (kind === 'work') await this.track(runtimeId, work);
    return kind;
  }

  /**
   * Listens for changes of membership (decisions may have changed: what another replica did not
   * do may be ours now); returns the unsubscribe.
   */
  onMembershipChange(listener: () => void): () => void {
    return this.membershipChanges.add(listener);
  }

  /** Counts `work` in flight on the runtime (a change of membership drains it) and fences it. */
  private async track<T>(runtimeId: string, work: (fence: LeaseFence) => Promise<T>): Promise<T> {
    const fence = this.membership.fence();
    this.inFlight.set(runtimeId, (this.inFlight.get(runtimeId) ?? 0) + 1);
    this.o.settings.onWork?.(runtimeId, 'start');
    try {
      return await work(fence);
    } finally {
      this.o.settings.onWork?.(runtimeId, 'end');
      const left = (this.inFlight.get(runtimeId) ?? 1) - 1;
      if (left === 0) this.inFlight.delete(runtimeId);
      else this.inFlight.set(runtimeId, left);
      const waiters = this.ended;
      this.ended = [];
      for (const w of waiters) w();
    }
  }

  /** Leaves: stops working (drained), then releases the Lease unless `release` is false (a crash, in tests). */
  async stop(options: { readonly release?: boolean } = {}): Promise<void> {
    clearInterval(this.refresh);
    await this.membership.stop(options);
    this.leaseAccess.close();
    this.gauges.owned(0);
    this.gauges.members(0);
  }

  /** Whether the runtime is ours to work now; remembers the key when it may become so without a move. */
  private workable(key: string, runtimeId: string): boolean {
    const kind = this.membership.decide(runtimeId).kind;
    if (kind === 'work') return true;
    // Another replica's: it works the runtime (and reconciles it fully when it takes it over).
    if (kind === 'elsewhere') this.deferred.delete(key);
    else this.deferred.add(key);
    return false;
  }

  /** Resolves once every runtime in flight is one we may still work. */
  private async drain(): Promise<void> {
    for (;;) {
      const leaving = [...this.inFlight.keys()].some((id) => this.membership.decide(id).kind !== 'work');
      if (!leaving) return;
      await new Promise<void>((resolve) => this.ended.push(resolve));
    }
  }

  /** Recomputes what is ours; on a membership change, queues what we gained and counts the moves. */
  private recount(changed: boolean): void {
    const now = new Set<string>();
    const gained: string[] = [];
    for (const rb of this.o.bootstrappers.list()) {
      const runtimeId = rb.spec.runtimeID;
      const key = `${rb.metadata.namespace}/${rb.metadata.name}`;
      if (this.membership.decide(runtimeId).kind !== 'work') continue;
      now.add(runtimeId);
      if (!this.owned.has(runtimeId)) gained.push(key);
    }
    if (changed) {
      let lost = 0;
      for (const id of this.owned) if (!now.has(id)) lost++;
      this.moves('gained', gained.length);
      this.moves('lost', lost);
      for (const key of gained) this.requeue.emit(key);
      this.membershipChanges.emit();
    }
    this.owned = now;
    for (const key of [...this.deferred]) {
      this.deferred.delete(key);
      // Queued if workable now, remembered again if still not, forgotten if another's.
      this.requeue.emit(key);
    }
    this.gauges.owned(now.size);
    this.gauges.members(this.membership.members().length);
  }
}
