/**
 * The runtime's count of escaped Pods in its RuntimeBootstrapper's status (pure): field
 * `escapedPods` and condition `EscapedPods`. The count is the runtime's word about itself alone
 * (DESIGN §14): read bounded (../../api/escaped-pods.ts), never compared with other runtimes.
 */
import { ESCAPE_REASONS, type EscapedPodsReport } from '../../api/escaped-pods.js';
import type { EscapedPodsSummary } from '../../api/runtime-bootstrapper.js';
import type { WebhookStatusReport } from '../../api/webhook-status.js';
import type { StatusBuilder } from './status-builder.js';

/** The status field of a report (pure). */
export function escapedSummaryOf(r: EscapedPodsReport): EscapedPodsSummary {
  return {
    pods: r.pods,
    reasons: Object.keys(r.reasons).length > 0 ? { ...r.reasons } : undefined,
    bare: r.bare,
    repair: r.repair,
    restarted: r.restarted,
    revision: r.revision,
    reportedAt: r.at,
  };
}

/** The condition's message: the counts by reason, and what the repair does. */
function message(r: EscapedPodsReport): string {
  const reasons = ESCAPE_REASONS.filter((x) => (r.reasons[x] ?? 0) > 0)
    .map((x) => `${x} ${r.reasons[x] ?? 0}`)
    .join(', ');
  const repair = r.repair
    ? `their owners are restarted (${r.restarted} so far)`
    : 'the repair is off (docs/runbooks/RtbEscapedPods.md)';
  return `${r.pods} running Pod(s) do not follow the set in force (${reasons}); ${r.bare} without an owner, never restarted; ${repair}`;
}

/**
 * Records the report's count: the field, and condition `EscapedPods` True (`Found`) or False
 * (`None`); a report without a count drops both.
 */
export function recordEscaped(status: StatusBuilder, report: WebhookStatusReport): void {
  const r = report.escapedPods;
  if (r === undefined) {
    status.escapedPods(undefined).dropCondition('EscapedPods');
    return;
  }
  status.escapedPods(escapedSummaryOf(r));
  if (r.pods > 0) status.condition('EscapedPods', 'True', 'Found', message(r));
  else
    status.condition(
      'EscapedPods',
      'False',
      'None',
      `every running Pod in scope follows the set in force (${r.scanned} looked at)`,
    );
}
