import type { WorkloadsSummary } from '../../api/runtime-bootstrapper.js';
import type { WorkloadHealthReport } from '../../api/workload-health.js';

/**
 * The most keys of originals that ran under earlier sets kept in a status: each is compared with
 * other runtimes' unproven failures (../rollout/regression.ts), and thousands of statuses hold them.
 */
export const MAX_RAN_BEFORE = 128;

/**
 * What of a runtime's workload report goes into its status for the set applied (pure): that
 * revision's figures (zeros when it has none), and instead of the images that ran under it, those
 * that ran under the other revisions the report names (`ranBefore`), so the rollout can prove
 * another runtime's failure a regression: its original ran under an earlier set here.
 */
export function workloadsSummaryOf(workloads: WorkloadHealthReport, applied: string): WorkloadsSummary {
  const h = workloads[applied] ?? { pods: 0, started: 0, failing: 0, failedPods: 0, samples: [] };
  const ranBefore = new Set<string>();
  for (const [revision, other] of Object.entries(workloads)) {
    if (revision === applied) continue;
    for (const key of other.ran ?? []) {
      if (ranBefore.size >= MAX_RAN_BEFORE) break;
      ranBefore.add(key);
    }
  }
  return {
    pods: h.pods,
    started: h.started,
    failing: h.failing,
    failedPods: h.failedPods,
    firstPodAt: h.firstPodAt,
    samples: h.samples,
    regressions: h.regressions,
    unproven: h.unproven,
    ranBefore: ranBefore.size > 0 ? [...ranBefore].sort() : undefined,
    revision: applied,
  };
}
