/**
 * The runtime's trust-restart count in the RuntimeBootstrapper status (docs/trust-restart.md,
 * "Status for the KCP"). The restarter writes it as an annotation on the webhook Deployment, which
 * the state machine reads anyway whenever it waits for the webhook's rollout (install, upgrade,
 * forced resync): that read fills the status at no cost. A Ready pass reads the Deployment for it
 * only while a rotation is under way ({@link trustLookDue}), so a runtime at rest costs nothing
 * more. Pure.
 */
import type { TrustRestartSummary } from '../../api/runtime-bootstrapper.js';
import { trustBundleHash, type TrustRestartStatus } from '../../api/trust-stamp.js';
import type { SyncSetResult } from './sync-set.js';

/** How often a rotation under way is looked at (the restarter writes at most every 30 s). */
export const TRUST_POLL_MS = 30_000;

/**
 * How long a rotation is followed without news: a set applied longer ago whose bundle the runtime
 * does not report, or a count unchanged for longer (a restart stuck, or a webhook without the
 * restarter), is left to the periodic resync.
 */
export const TRUST_POLL_WINDOW_MS = 15 * 60_000;

/** The restarter's report as the status holds it (undefined: none, the field is cleared). */
export function trustSummary(report: TrustRestartStatus | undefined): TrustRestartSummary | undefined {
  // The runtime's word: a stamp longer than the CRD takes (64) would fail every status write.
  if (report === undefined || report.bundle.length > 64) return undefined;
  const at = Date.parse(report.at);
  return {
    bundle: report.bundle,
    stalePods: report.stalePods,
    barePods: report.barePods,
    optedOutPods: report.optedOutPods,
    // The CRD checks the format: a value it would refuse is left out rather than failing the write.
    reportedAt: Number.isNaN(at) ? undefined : new Date(at).toISOString(),
  };
}

/** The first 12 hex digits of the hash of the set's trust bundle, as the restarter reports it. */
export function setBundleOf(set: SyncSetResult): string | undefined {
  if (!set.ok) return undefined;
  const ctb = set.set.objects.find((o) => o.kind === 'ClusterTrustBundle') as
    { spec?: { trustBundle?: unknown } } | undefined;
  const text = ctb?.spec?.trustBundle;
  return typeof text === 'string' ? trustBundleHash(text).slice(0, 12) : undefined;
}

/** What {@link trustLookDue} weighs. */
export interface TrustLookInput {
  /** The status's last report (none: no restarter reported yet; the next resync looks). */
  readonly current: TrustRestartSummary | undefined;
  /** The bundle of the set applied ({@link setBundleOf}). */
  readonly setBundle: string | undefined;
  /** When that set was applied (the status's `appliedAt`). */
  readonly appliedAt: string | undefined;
  readonly nowMs: number;
}

/**
 * Whether a Ready pass should read the webhook Deployment for the count: the runtime has not
 * reported the bundle of the set applied lately, or Pods are still to be restarted and the count
 * moved lately. Bare Pods are never restarted, so they alone keep nothing polled.
 */
export function trustLookDue(i: TrustLookInput): boolean {
  const c = i.current;
  if (c === undefined) return false;
  const lately = (t: string | undefined): boolean =>
    t !== undefined && i.nowMs - Date.parse(t) < TRUST_POLL_WINDOW_MS;
  if (i.setBundle !== undefined && c.bundle !== i.setBundle && lately(i.appliedAt)) return true;
  return c.stalePods - (c.barePods ?? 0) > 0 && lately(c.reportedAt);
}
