import type { RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { FleetTracker, type Tracked } from './fleet-tracker.js';
import { RB_PATH } from './kcp-bench.js';

/** What the benchmark follows of one CR (with `at`, `performance.now()` when it was seen). */
export type TrackedStatus = Tracked<{
  readonly state: string | undefined;
  readonly appliedVersion: string | undefined;
  /** The set the runtime's webhook reports serving (under a rollout policy only). */
  readonly servedVersion: string | undefined;
}>;

/**
 * Every RuntimeBootstrapper's state and applied version as a watch on the KCP delivers them, so
 * "every status has the new version" is timed by the watch event that made it true.
 */
export class StatusTracker extends FleetTracker<RuntimeBootstrapper, Omit<TrackedStatus, 'at'>> {
  constructor(kcp: ClusterAccess) {
    super(
      kcp,
      RB_PATH,
      (rb) => ({
        state: rb.status?.state,
        appliedVersion: rb.status?.appliedVersion,
        servedVersion: rb.status?.servedVersion,
      }),
      'bench runtimebootstrappers',
    );
  }
}
