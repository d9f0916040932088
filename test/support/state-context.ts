/** A per-runtime state machine's context for unit tests: what a pass needs, every other field at its default. */
import type { StateContext } from '../../src/controller/direct/state-context.js';
import { TRUST_POLL_MS } from '../../src/controller/direct/trust-restart-status.js';
import { WORKLOAD_WATCH_MS } from '../../src/controller/direct/webhook-report.js';
import { UNFENCED } from '../../src/kube/lease-fence.js';
import { silentLogger } from '../../src/telemetry/logger.js';

/**
 * The context of one pass over `o.rb` with `o.ops`: no rollout, not forced, no identity claims,
 * unfenced, the default intervals, a silent log; `o` sets any field.
 */
export function stateContext(
  o: Pick<StateContext, 'rb' | 'set' | 'ops' | 'status' | 'serving'> & Partial<StateContext>,
): StateContext {
  return {
    release: { image: 'i', version: '1.0.0' },
    registrationUrl: undefined,
    forceResync: false,
    identity: undefined,
    servingCurrentUntil: undefined,
    trustPollMs: TRUST_POLL_MS,
    workloadWatchMs: WORKLOAD_WATCH_MS,
    rollout: undefined,
    workloadsLookedAt: undefined,
    fence: UNFENCED,
    log: silentLogger(),
    ...o,
  };
}
