// Every state of the RolloutPolicy as a watch on the KCP delivers it, with its arrival time, so
// the waves benchmark can tell when each wave started and when the rollout completed without
// polling.
import { rolloutPolicyPath, type RolloutPolicyResource } from '../../src/api/rollout-policy.js';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { createListerWatcher } from '../../src/kube/list-watch.js';
import { Reflector } from '../../src/kube/reflector.js';
import { ChangeWaiters } from './change-waiters.js';

/** One state of the rollout as the policy's status said it. */
export interface SeenRollout {
  readonly phase: string | undefined;
  readonly wave: number | undefined;
  readonly target: string | undefined;
  /** `performance.now()` when it arrived. */
  readonly at: number;
}

/** The states of the RolloutPolicy `default`, in the order they came. */
export class PolicyTracker {
  readonly seen: SeenRollout[] = [];
  private readonly changes = new ChangeWaiters();
  private readonly reflector: Reflector<RolloutPolicyResource>;

  constructor(kcp: ClusterAccess) {
    const record = (p: RolloutPolicyResource): void => {
      this.seen.push({
        phase: p.status?.phase,
        wave: p.status?.wave,
        target: p.status?.target,
        at: performance.now(),
      });
      this.changes.notify();
    };
    this.reflector = new Reflector<RolloutPolicyResource>({
      name: 'bench rolloutpolicy',
      listerWatcher: createListerWatcher<RolloutPolicyResource>(kcp, rolloutPolicyPath()),
      fieldSelector: 'metadata.name=default',
      handlers: {
        onAdd: record,
        onUpdate: (_old, p) => {
          record(p);
        },
      },
    });
  }

  async start(): Promise<void> {
    this.reflector.start();
    await this.reflector.waitForSync();
  }

  /** The last state seen. */
  latest(): SeenRollout | undefined {
    return this.seen.at(-1);
  }

  /** Resolves with the first state from index `from` on that satisfies `p`; rejects after `timeoutMs`. */
  async until(from: number, p: (s: SeenRollout) => boolean, timeoutMs: number): Promise<SeenRollout> {
    return this.changes.until(
      () => this.seen.slice(from).find(p),
      timeoutMs,
      () => `the rollout did not get there within ${timeoutMs} ms: ${JSON.stringify(this.latest())}`,
    );
  }

  async stop(): Promise<void> {
    await this.reflector.stop();
  }
}
