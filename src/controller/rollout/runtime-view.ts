import type { RuntimeBootstrapper, RuntimeBootstrapperStatus } from '../../api/runtime-bootstrapper.js';
import { preflightFailed } from '../../api/workload-health.js';
import { currentRevisionOf } from './revision.js';
import type { PreflightView, RuntimeView, WorkloadView } from './wave-planner.js';

/**
 * How a RuntimeBootstrapper looks to the planner (pure): its revision, and its health there.
 * Healthy: Ready (the webhook of that release available and registered) and the webhook reports
 * serving that set. Failed: the webhook refused that set. Pending: anything else, with why.
 */
export function runtimeView(rb: RuntimeBootstrapper): RuntimeView {
  const s = rb.status ?? {};
  const current = currentRevisionOf(s);
  // The KCP's own record of when it applied the set: a bound on the runtime's report's dates.
  const appliedAt = s.appliedAt === undefined ? Number.NaN : Date.parse(s.appliedAt);
  const base = {
    id: rb.spec.runtimeID,
    labels: rb.metadata.labels,
    current,
    excluded: rb.spec.paused === true || rb.metadata.deletionTimestamp !== undefined,
    appliedAt: Number.isNaN(appliedAt) ? undefined : appliedAt,
    ...workloadsOf(s),
  };
  if (s.appliedVersion !== undefined && s.refusedVersion === s.appliedVersion) {
    return {
      ...base,
      health: 'failed',
      reason: `the webhook refused set ${s.appliedVersion}${s.refusal ? `: ${s.refusal}` : ''}`,
    };
  }
  if (s.state === 'Ready' && s.appliedVersion !== undefined && s.servedVersion === s.appliedVersion) {
    return { ...base, health: 'healthy' };
  }
  return { ...base, health: 'pending', reason: pendingReason(rb) };
}

/** What the webhook reports of the Pods under the set applied, and of its last preflight. */
function workloadsOf(s: RuntimeBootstrapperStatus): {
  workloads?: WorkloadView;
  followsPods?: boolean;
  preflight?: PreflightView;
} {
  const out: { workloads?: WorkloadView; followsPods?: boolean; preflight?: PreflightView } = {};
  const w = s.workloads;
  if (w !== undefined || s.preflight !== undefined) out.followsPods = true;
  // Figures of another set than the one applied say nothing about it.
  if (w !== undefined && w.revision === s.appliedVersion) {
    const first = w.firstPodAt === undefined ? Number.NaN : Date.parse(w.firstPodAt);
    out.workloads = {
      pods: w.pods,
      failedPods: w.failedPods,
      firstPodAt: Number.isNaN(first) ? undefined : first,
      detail: w.samples.length > 0 ? failureSamples(w.samples) : undefined,
    };
  }
  const p = s.preflight;
  if (p !== undefined) {
    const failed = preflightFailed(p);
    out.preflight = {
      set: p.version,
      done: p.phase === 'done',
      failed,
      detail: failed ? preflightDetail(p) : undefined,
    };
  }
  return out;
}

/** The samples of failing Pods in one line: image (or Pod) and reason. */
export function failureSamples(samples: readonly { image?: string; pod: string; reason: string }[]): string {
  return samples.map((x) => `${x.image ?? x.pod}: ${x.reason}`).join('; ');
}

/** A failed preflight in one line: counts, then each sample's image, where it would go, and why. */
export function preflightDetail(p: NonNullable<RuntimeBootstrapperStatus['preflight']>): string {
  const counts = `${p.missing} missing, ${p.refused} refused of ${p.checked} checked`;
  const samples = p.samples
    .filter((x) => x.result !== 'unreachable')
    .map((x) => `${x.result} ${x.image} at ${x.target}${x.detail ? ` (${x.detail})` : ''}`);
  return samples.length > 0 ? `${counts}: ${samples.join('; ')}` : counts;
}

/** Conditions that tell about a runtime without keeping it from Ready. */
const ADVISORY: ReadonlySet<string> = new Set([
  'ExclusivelyManaged',
  'TrustBundleAPI',
  'TrustBundleProjection',
  'Degraded',
]);

function pendingReason(rb: RuntimeBootstrapper): string {
  const s = rb.status ?? {};
  if (s.state === 'Ready') return `the webhook has not reported serving set ${s.appliedVersion ?? '?'} yet`;
  const failing = s.conditions?.find((c) => c.status !== 'True' && !ADVISORY.has(c.type));
  const why = failing ? `${failing.type} ${failing.reason}: ${failing.message}` : 'not installed yet';
  return `${s.state ?? 'Pending'}: ${why}`.slice(0, 500);
}
