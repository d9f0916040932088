/**
 * The controller Pod's `terminationGracePeriodSeconds`: SIGTERM stops the mode (direct mode lets
 * reconciles in flight finish for DEFAULT_STOP_DRAIN_MS, then abandons their calls to runtimes),
 * releases the Lease and stops the watches well within it.
 */
export const CONTROLLER_GRACE_SECONDS = 30;

/**
 * After SIGTERM, a process still stopping this long ends itself (status 1) before the kubelet's
 * SIGKILL, so the log says so: whatever a stop waits for, the process never outlives its grace.
 */
export const CONTROLLER_HARD_STOP_MS = (CONTROLLER_GRACE_SECONDS - 2) * 1000;
