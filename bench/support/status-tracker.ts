import type { RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { createListerWatcher } from '../../src/kube/list-watch.js';
import { Reflector } from '../../src/kube/reflector.js';
import { ChangeWaiters } from './change-waiters.js';
import { RB_PATH } from './kcp-bench.js';

/** What the benchmark follows of one CR. */
export interface TrackedStatus {
  readonly state: string | undefined;
  readonly appliedVersion: string | undefined;
  /** The set the runtime's webhook reports serving (under a rollout policy only). */
  readonly servedVersion: string | undefined;
  /** `performance.now()` when this was seen. */
  readonly at: number;
}

/**
 * Every RuntimeBootstrapper's state and applied version as a watch on the KCP delivers them (the
 * product's reflector, in the benchmark process), so "every status has the new version" is timed
 * by the watch event that made it true, without listing thousands of CRs again and again.
 */
export class StatusTracker {
  private readonly statuses = new Map<string, TrackedStatus>();
  private readonly changes = new ChangeWaiters();
  private readonly reflector: Reflector<RuntimeBootstrapper>;

  constructor(kcp: ClusterAccess) {
    this.reflector = new Reflector<RuntimeBootstrapper>({
      name: 'bench runtimebootstrappers',
      listerWatcher: createListerWatcher<RuntimeBootstrapper>(kcp, RB_PATH),
    });
    const seen = (rb: RuntimeBootstrapper): void => {
      this.statuses.set(rb.metadata.name, {
        state: rb.status?.state,
        appliedVersion: rb.status?.appliedVersion,
        servedVersion: rb.status?.servedVersion,
        at: performance.now(),
      });
      this.changes.notify();
    };
    this.reflector.addEventHandler({
      onAdd: seen,
      onUpdate: (_old, rb) => {
        seen(rb);
      },
    });
  }

  async start(): Promise<void> {
    this.reflector.start();
    await this.reflector.waitForSync();
  }

  /** How many CRs satisfy `p`. */
  count(p: (s: TrackedStatus) => boolean): number {
    let n = 0;
    for (const s of this.statuses.values()) if (p(s)) n++;
    return n;
  }

  /** Every status of the fleet. */
  all(): TrackedStatus[] {
    return [...this.statuses.values()];
  }

  /**
   * Resolves once `expected` CRs satisfy `p`, with the time of the last arrival among them;
   * rejects after `timeoutMs` saying how many did.
   */
  async until(expected: number, p: (s: TrackedStatus) => boolean, timeoutMs: number): Promise<number> {
    return this.changes.until(
      () => {
        const matching = this.all().filter(p);
        return matching.length >= expected ? Math.max(...matching.map((s) => s.at)) : undefined;
      },
      timeoutMs,
      () => `only ${this.all().filter(p).length} of ${expected} CRs got there within ${timeoutMs} ms`,
    );
  }

  async stop(): Promise<void> {
    await this.reflector.stop();
  }
}
