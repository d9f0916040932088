import type { WebhookRelease } from '../direct/runtime-manifests.js';
import type { SyncSources } from '../direct/sync-set.js';

/**
 * A revision: one source set and one webhook release, what a rollout carries to the runtimes.
 * Its ID is `<set version>/<release version>`, so a new set and a new release are rollouts alike.
 */
export interface Revision {
  readonly id: string;
  readonly sources: SyncSources;
  readonly release: WebhookRelease;
}

/** The ID of a set version under a release. */
export function revisionId(setVersion: string, releaseVersion: string): string {
  return `${setVersion}/${releaseVersion}`;
}

/** The revision a runtime is on, from what its status says it applied (undefined before its install). */
export function currentRevisionOf(status: {
  readonly appliedVersion?: string;
  readonly webhookVersion?: string;
}): string | undefined {
  return status.appliedVersion !== undefined && status.webhookVersion !== undefined
    ? revisionId(status.appliedVersion, status.webhookVersion)
    : undefined;
}
