/**
 * The last state of the per-runtime machine (./state-machine.ts): after the states' work ended,
 * whatever its outcome, the looks at what the runtime's webhook reports (the rollout's wave and
 * the set it serves, the trust-bundle projection, the workloads and the preflight, DESIGN §11),
 * and a call that broke a bound failing the pass. It ends the pass.
 */
import type { WebhookStatusReport } from '../../api/webhook-status.js';
import type { PreflightCandidate } from './preflight-candidate.js';
import { firstLine, type Found, type Outcome, type PassResult, type StateContext } from './state-context.js';
import { setHasTrustBundle } from './trust-bundle-api-status.js';
import { recordProjection } from './trust-projection-status.js';
import {
  observeTrustProjection,
  observeWebhookReport,
  observeWorkloads,
  recordReportRefusal,
  WORKLOAD_SLOW_LOOK_MS,
} from './webhook-report.js';

/**
 * The last state: the machine's work ended with `outcome`, the states found `found`. Under a
 * rollout it records the wave and what the webhook says of the set applied; without one (none, or
 * the policy deleted), neither, so no stale wave or report stays in the status. Once this replica
 * no longer holds the runtime it looks at nothing (the runtime is another replica's to report on).
 */
export async function sFnObserve(ctx: StateContext, found: Found, outcome: Outcome): Promise<PassResult> {
  const end = (o: Outcome, workloadsLookedAt?: number): PassResult => ({
    outcome: o,
    servingCheckedUntil: found.servingCheckedUntil,
    workloadsLookedAt,
  });
  if (!ctx.fence()) return end(outcome);
  const { status, rollout: choice } = ctx;
  let pollAfterMs: number | undefined;
  // One read of the webhook's report serves every look at it.
  let report: Promise<WebhookStatusReport> | undefined;
  const readReport = (): Promise<WebhookStatusReport> =>
    (report ??= ctx.ops.readWebhookReport().then((r) => {
      recordReportRefusal(status, r);
      return r;
    }));
  if (!choice) status.noRollout();
  else if (!outcome.error) {
    status.wave(choice.wave);
    ({ pollAfterMs } = await observeWebhookReport(status, readReport));
  }
  if (!outcome.error && ctx.set.ok) {
    const projection = await observeTrustProjection(status, readReport, {
      hasBundle: setHasTrustBundle(ctx.set.set),
      thorough: ctx.forceResync || found.wrote,
      nowMs: ctx.serving.now(),
    });
    if (projection.pollAfterMs !== undefined)
      pollAfterMs = Math.min(pollAfterMs ?? Infinity, projection.pollAfterMs);
  }
  // Workload health and the preflight, with or without a policy (DESIGN §11): read on the
  // passes made anyway, bounded, and often while the rollout watches this runtime. A pass that
  // just wrote a new set (or the webhook's objects) sends no read of its own for it: no Pod can
  // be under that set yet.
  let workloadsLookedAt: number | undefined;
  const wroteSet = status.build().appliedVersion !== ctx.rb.status?.appliedVersion;
  const freshSet = (wroteSet || found.wrote) && choice?.watch !== true && report === undefined;
  if (!outcome.error && status.build().state === 'Ready') {
    if (freshSet) {
      pollAfterMs = Math.min(pollAfterMs ?? Infinity, WORKLOAD_SLOW_LOOK_MS);
    } else {
      const nowMs = ctx.serving.now();
      const look = await observeWorkloads(status, readReport, {
        watch: choice?.watch === true,
        watchMs: ctx.workloadWatchMs,
        nowMs,
        lastLookMs: ctx.workloadsLookedAt,
      });
      if (look.looked) workloadsLookedAt = nowMs;
      pollAfterMs = Math.min(pollAfterMs ?? Infinity, look.pollAfterMs);
    }
    const retry = await placePreflight(ctx, choice?.preflight);
    if (retry !== undefined) pollAfterMs = Math.min(pollAfterMs, retry);
  }
  // A report read anyway (the rollout's, the workloads') tells the projection too, at no cost:
  // nodes whose kubelets cannot read the bundle come and go with node pools, and the admission
  // policy must stop mounting it there long before the next full resync.
  const reportRead = report;
  if (
    reportRead !== undefined &&
    !outcome.error &&
    ctx.set.ok &&
    setHasTrustBundle(ctx.set.set) &&
    status.build().state === 'Ready'
  )
    await reportRead.then(
      (r) => {
        recordProjection(status, r.trustBundle);
      },
      () => undefined,
    );
  // A call that broke a bound (too slow, too much) where a state caught the failure and went on,
  // or in a look at the report: the pass failed all the same, and RuntimeReachable says why. One
  // abandoned because this process stops is the reconciler's: it reports nothing.
  const refusal = ctx.ops.refusal();
  if (refusal !== undefined && refusal.reason !== 'Stopping' && outcome.error !== refusal) {
    status.state('Error').condition('RuntimeReachable', 'False', refusal.reason, firstLine(refusal));
    return end({ error: refusal }, workloadsLookedAt);
  }
  if (outcome.error) return end(outcome, workloadsLookedAt);
  const requeueAfterMs = Math.min(outcome.requeueAfterMs ?? Infinity, pollAfterMs ?? Infinity);
  return end(Number.isFinite(requeueAfterMs) ? { requeueAfterMs } : {}, workloadsLookedAt);
}

/**
 * Puts the candidate the rollout asks this runtime's webhook to check on the runtime, or takes
 * an earlier one away; only on a change (the status remembers the candidate left there). A failed
 * write asks for another pass soon.
 */
async function placePreflight(
  ctx: StateContext,
  want: PreflightCandidate | undefined,
): Promise<number | undefined> {
  if (want?.version === ctx.rb.status?.preflightCandidate) return undefined;
  try {
    await ctx.ops.writePreflight(want);
    ctx.status.preflightCandidate(want?.version);
    return undefined;
  } catch (error) {
    ctx.log.warn({ err: error, candidate: want?.version ?? null }, 'could not place the preflight candidate');
    return ctx.workloadWatchMs;
  }
}
