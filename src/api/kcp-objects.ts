/**
 * What the controller's rendered manifests and the controller process agree on, on the KCP: the
 * names of the objects it keeps there and how long its Pod may take to stop. Constants only, so
 * the CLI may read them without loading the controller.
 */

/** Default name of the leader-election Lease. */
export const CONTROLLER_LEASE_NAME = 'rt-bootstrapper-controller';

/** Default name of the ConfigMap keeping annotate mode's state. */
export const DEFAULT_STATE_CONFIG_MAP = 'rt-bootstrapper-controller-state';

/**
 * The controller Pod's `terminationGracePeriodSeconds`: SIGTERM stops the mode (direct mode lets
 * reconciles in flight finish for DEFAULT_STOP_DRAIN_MS, then abandons their calls to runtimes),
 * releases the Lease and stops the watches well within it.
 */
export const CONTROLLER_GRACE_SECONDS = 30;

/** Revisions kept by default (besides the ones a rollout still names). */
export const REVISIONS_KEPT = 5;

/**
 * The Secret names of the revision slots: a fixed few, so the controller's Role names them (it
 * may update these and no other Secret of the namespace).
 */
export function revisionSecretNames(keep = REVISIONS_KEPT): string[] {
  return Array.from({ length: keep }, (_, i) => `rt-bootstrapper-revision-${i}`);
}
