import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import { currentRevisionOf } from './revision.js';
import type { RuntimeView } from './wave-planner.js';

/**
 * How a RuntimeBootstrapper looks to the planner (pure): its revision, and its health there.
 * Healthy: Ready (the webhook of that release available and registered) and the webhook reports
 * serving that set. Failed: the webhook refused that set. Pending: anything else, with why.
 */
export function runtimeView(rb: RuntimeBootstrapper): RuntimeView {
  const s = rb.status ?? {};
  const current = currentRevisionOf(s);
  const base = {
    id: rb.spec.runtimeID,
    ...(rb.metadata.labels ? { labels: rb.metadata.labels } : {}),
    ...(current !== undefined ? { current } : {}),
    ...(rb.spec.paused === true || rb.metadata.deletionTimestamp !== undefined ? { excluded: true } : {}),
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

/** Conditions that tell about a runtime without keeping it from Ready. */
const ADVISORY: ReadonlySet<string> = new Set([
  'ExclusivelyManaged',
  'TrustBundleAPI',
  'TrustBundleProjection',
]);

function pendingReason(rb: RuntimeBootstrapper): string {
  const s = rb.status ?? {};
  if (s.state === 'Ready') return `the webhook has not reported serving set ${s.appliedVersion ?? '?'} yet`;
  const failing = s.conditions?.find((c) => c.status !== 'True' && !ADVISORY.has(c.type));
  const why = failing ? `${failing.type} ${failing.reason}: ${failing.message}` : 'not installed yet';
  return `${s.state ?? 'Pending'}: ${why}`.slice(0, 500);
}
