/**
 * What a sharded replica knows of the shard Leases: a watch of every Lease by label, each with
 * the local time its resourceVersion was first seen (so liveness is judged by this replica's own
 * clock, as leader election's candidates do) and the view its holder published. It tells its
 * owner when liveness or a published view changed (renewals alone change neither, so a settled
 * shard hears nothing until something moves), including when a Lease expires with no event at
 * all, and lets the owner wait until its own Lease shows a view it published.
 */
import type { V1Lease } from '@kubernetes/client-node';
import type { Logger } from '../telemetry/logger.js';
import type { ClusterAccess } from './cluster-access.js';
import { leaseRecordOf } from './lease-decision.js';
import { createListerWatcher } from './list-watch.js';
import { Reflector } from './reflector.js';
import { stripManagedFields } from './reflector-options.js';
import {
  liveMembers,
  nextExpiryMs,
  parseShardView,
  SHARD_VIEW_ANNOTATION,
  type MemberObservation,
  type ShardView,
} from './shard-view.js';

/** A shard Lease as observed, with the resourceVersion its observation time belongs to. */
export type LeaseObservation = MemberObservation & { readonly rv: string };

/** Settings of a {@link ShardLeaseWatch}. */
export interface ShardLeaseWatchOptions {
  readonly access: ClusterAccess;
  readonly namespace: string;
  /** Label (`key=value`) on every shard Lease. */
  readonly label: { readonly key: string; readonly value: string };
  /** The watching replica's identity (its own liveness is its elector's to tell) and Lease name. */
  readonly self: string;
  readonly ownLease: string;
  readonly leaseDurationMs: number;
  readonly logger: Logger;
  /** Liveness or a published view changed (or `poke` asked); not called for renewals alone. */
  readonly onChange: () => void;
}

/** See the file comment. */
export class ShardLeaseWatch {
  private readonly leases: Reflector<V1Lease>;
  private readonly seen = new Map<string, LeaseObservation>();
  private signature = '';
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private waiters: (() => void)[] = [];

  constructor(private readonly o: ShardLeaseWatchOptions) {
    this.leases = new Reflector<V1Lease>({
      name: 'shard leases',
      listerWatcher: createListerWatcher<V1Lease>(
        o.access,
        `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(o.namespace)}/leases`,
      ),
      labelSelector: `${o.label.key}=${o.label.value}`,
      transform: stripManagedFields,
      logger: o.logger,
      handlers: {
        onAdd: (l) => {
          this.observe(l);
        },
        onUpdate: (_old, l) => {
          this.observe(l);
        },
        onDelete: (l) => {
          this.seen.delete(l.metadata?.name ?? '');
          this.check();
        },
      },
    });
  }

  /** Starts watching; resolves once the Leases were listed. */
  async start(): Promise<void> {
    this.leases.start();
    await this.leases.waitForSync();
  }

  /** Stops watching and wakes whoever waits for its own view. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.wake();
    await this.leases.stop();
  }

  /** Every shard Lease as observed now, by name. */
  observations(): ReadonlyMap<string, LeaseObservation> {
    return this.seen;
  }

  /** The live members other than this replica (by its clock now), each with its published view. */
  live(): Map<string, ShardView | undefined> {
    return liveMembers(this.seen.values(), this.o.self, performance.now(), this.o.leaseDurationMs);
  }

  /** The generation of the view on this replica's own Lease as last observed (0: none). */
  ownGeneration(): number {
    return this.seen.get(this.o.ownLease)?.view?.generation ?? 0;
  }

  /**
   * Resolves once the watch showed this replica's own Lease with at least `generation`, or
   * `give` says to stop waiting (then false); throws after a lease duration.
   */
  async confirm(generation: number, give: () => boolean): Promise<boolean> {
    const deadline = performance.now() + this.o.leaseDurationMs;
    for (;;) {
      if (give() || this.stopped) return false;
      if (this.ownGeneration() >= generation) return true;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`shard view ${generation} not seen on the watch in time`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  /** Wakes whoever waits in {@link confirm} (the replica's term ended). */
  wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Tells the owner even if nothing changed. */
  poke(): void {
    this.check(true);
  }

  private observe(lease: V1Lease): void {
    const name = lease.metadata?.name ?? '';
    const rv = lease.metadata?.resourceVersion ?? '';
    const known = this.seen.get(name);
    // Only a new resourceVersion restarts the expiry count (as leader election's candidates).
    const observedAtMs = known?.rv === rv ? known.observedAtMs : performance.now();
    const view = parseShardView(lease.metadata?.annotations?.[SHARD_VIEW_ANNOTATION]);
    this.seen.set(name, { record: leaseRecordOf(lease), observedAtMs, view, rv });
    if (name === this.o.ownLease) this.wake();
    this.check();
  }

  /** Tells the owner when liveness or a published view changed; re-arms the expiry timer. */
  private check(force = false): void {
    if (this.stopped) return;
    const now = performance.now();
    const signature = [...this.live()]
      .map(([m, v]) => `${m}:${v?.generation ?? '-'}:${v?.members.join(',') ?? ''}`)
      .sort()
      .join('|');
    clearTimeout(this.timer);
    const at = nextExpiryMs(this.seen.values(), this.o.self, now, this.o.leaseDurationMs);
    if (at !== undefined)
      this.timer = setTimeout(
        () => {
          this.check();
        },
        Math.ceil(at - now) + 1,
      );
    if (!force && signature === this.signature) return;
    this.signature = signature;
    this.o.onChange();
  }
}
