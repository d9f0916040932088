import { CONTROLLER_GRACE_SECONDS } from '../api/kcp-objects.js';

/**
 * After SIGTERM, a process still stopping this long ends itself (status 1) before the kubelet's
 * SIGKILL, so the log says so: whatever a stop waits for, the process never outlives its grace.
 */
export const CONTROLLER_HARD_STOP_MS = (CONTROLLER_GRACE_SECONDS - 2) * 1000;
