/**
 * Garbage collection of shard Leases: each controller process holds a Lease named after its
 * identity, so every restart leaves one behind. Any live member deletes those released or expired
 * for two lease durations (by its own clock), with a resourceVersion precondition so a Lease that
 * came back to life meanwhile is kept.
 */
import type { Logger } from '../telemetry/logger.js';
import type { ClusterAccess } from './cluster-access.js';
import { statusCodeOf } from './kube-errors.js';
import { kubeRequest } from './kube-request.js';
import { leaseExpiresAtMs } from './lease-decision.js';
import type { MemberObservation } from './shard-view.js';

/** Whether an observed shard Lease may be deleted: released or expired for two lease durations (pure). */
export function staleShardLease(
  o: MemberObservation,
  nowMs: number,
  defaultLeaseDurationMs: number,
): boolean {
  const expiresAt = leaseExpiresAtMs(o.record, o.observedAtMs, defaultLeaseDurationMs) ?? o.observedAtMs;
  return nowMs > expiresAt + 2 * defaultLeaseDurationMs;
}

/** Settings of a {@link ShardLeaseCollector}. */
export interface ShardLeaseCollectorOptions {
  readonly access: ClusterAccess;
  readonly namespace: string;
  /** This member's own Lease (never collected). */
  readonly own: string;
  readonly leaseDurationMs: number;
  /** The shard Leases as observed now, by name (empty while this member works nothing). */
  readonly observations: () => ReadonlyMap<string, MemberObservation & { readonly rv: string }>;
  readonly logger: Logger;
}

/** Deletes stale shard Leases every lease duration. */
export class ShardLeaseCollector {
  private timer: NodeJS.Timeout | undefined;
  private readonly deleting = new Set<string>();

  constructor(private readonly o: ShardLeaseCollectorOptions) {}

  start(): void {
    this.timer = setInterval(() => {
      this.collect();
    }, this.o.leaseDurationMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private collect(): void {
    const now = performance.now();
    for (const [name, o] of this.o.observations()) {
      if (name === this.o.own || this.deleting.has(name)) continue;
      if (!staleShardLease(o, now, this.o.leaseDurationMs)) continue;
      this.deleting.add(name);
      this.delete(name, o.rv)
        .then(() => {
          this.o.logger.info({ lease: name }, 'stale shard lease deleted');
        })
        .catch((err: unknown) => {
          this.o.logger.warn({ err, lease: name }, 'cannot delete a stale shard lease');
        })
        .finally(() => {
          this.deleting.delete(name);
        });
    }
  }

  private async delete(name: string, resourceVersion: string): Promise<void> {
    const ns = encodeURIComponent(this.o.namespace);
    try {
      await kubeRequest(this.o.access, {
        method: 'DELETE',
        path: `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${encodeURIComponent(name)}`,
        body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { resourceVersion } },
        parseResponse: false,
      });
    } catch (err) {
      // Gone already, or renewed (or deleted) meanwhile.
      if (statusCodeOf(err) !== 404 && statusCodeOf(err) !== 409) throw err;
    }
  }
}
