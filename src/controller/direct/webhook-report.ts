import type { WebhookStatusReport } from '../../api/webhook-status.js';
import type { StatusBuilder } from './status-builder.js';
import { recordEscaped } from './escaped-pods-status.js';
import { recordRegistryCaches } from './registry-cache-status.js';
import { workloadsSummaryOf } from './workloads-summary.js';
import {
  PROJECTION_REPORT_POLL_MS,
  projectionLookDue,
  projectionPollDue,
  recordProjection,
  type ProjectionLookInput,
} from './trust-projection-status.js';

/**
 * The most of a report's refusal kept (the CRD's `status.refusal` maxLength): the report is the
 * runtime's word, and a longer text would make every status write of the runtime fail.
 */
export const REFUSAL_MAX_CHARS = 2048;
/** A version the report names that is longer than this is no set version of ours: left out. */
export const REPORTED_VERSION_MAX_CHARS = 128;

/** What of a report goes into the status, bounded (pure). */
export function reportForStatus(report: WebhookStatusReport): {
  servedVersion?: string;
  refusedVersion?: string;
  refusal?: string;
} {
  const version = (v: string | undefined): string | undefined =>
    v !== undefined && v.length <= REPORTED_VERSION_MAX_CHARS ? v : undefined;
  // Undefined clears the field: the status patch sends null for it (../../kube/merge-patch.ts).
  return {
    servedVersion: version(report.loadedVersion),
    refusedVersion: version(report.refusedVersion),
    refusal: report.refusal?.slice(0, REFUSAL_MAX_CHARS),
  };
}

/**
 * Says in condition `WebhookReport` whether the KCP refused the report it read (or a part of it),
 * and drops the condition when it read all of it (pure).
 */
export function recordReportRefusal(status: StatusBuilder, report: WebhookStatusReport): void {
  const r = report.refused;
  if (r === undefined) status.dropCondition('WebhookReport');
  else status.condition('WebhookReport', 'False', r.reason, r.message);
}

/** How soon a runtime whose webhook has not reported the set applied is looked at again. */
export const REPORT_POLL_MS = 2_000;

/**
 * Reads the webhook's report into the status once a pass left the runtime Ready at a set the
 * report does not speak of yet (one GET per runtime per new set, none at rest); asks for another
 * look soon while the webhook has not caught up. A failed read only asks for another look.
 */
export async function observeWebhookReport(
  status: StatusBuilder,
  read: () => Promise<WebhookStatusReport>,
): Promise<{ pollAfterMs?: number }> {
  const s = status.build();
  const applied = s.appliedVersion;
  if (s.state !== 'Ready' || applied === undefined) return {};
  if (s.servedVersion === applied || s.refusedVersion === applied) return {};
  let report: WebhookStatusReport;
  try {
    report = await read();
  } catch {
    return { pollAfterMs: REPORT_POLL_MS };
  }
  status.served(reportForStatus(report));
  return report.loadedVersion === applied || report.refusedVersion === applied
    ? {}
    : { pollAfterMs: REPORT_POLL_MS };
}

/** What {@link observeTrustProjection} needs of the pass. */
export interface ProjectionPass {
  /** The set applied holds a trust bundle. */
  readonly hasBundle: boolean;
  /** A forced pass, or one that wrote the webhook's objects. */
  readonly thorough: boolean;
  readonly nowMs: number;
}

/**
 * Puts the webhook's finding on the trust-bundle projection into condition `TrustBundleProjection`
 * when a look is due (./trust-projection-status.ts); without a bundle in the set the condition is
 * dropped. A failed read leaves the condition as it was. Asks for another look soon while a
 * webhook installed lately has not reported.
 */
export async function observeTrustProjection(
  status: StatusBuilder,
  read: () => Promise<WebhookStatusReport>,
  pass: ProjectionPass,
): Promise<{ pollAfterMs?: number }> {
  if (!pass.hasBundle) {
    status.dropCondition('TrustBundleProjection');
    return {};
  }
  const installedAt = Date.parse(status.get('Installed')?.lastTransitionTime ?? '');
  const input: ProjectionLookInput = {
    ready: status.build().state === 'Ready',
    hasBundle: pass.hasBundle,
    thorough: pass.thorough,
    current: status.get('TrustBundleProjection'),
    installedAtMs: Number.isNaN(installedAt) ? 0 : installedAt,
    nowMs: pass.nowMs,
  };
  if (!projectionLookDue(input)) return {};
  try {
    recordProjection(status, (await read()).trustBundle);
  } catch {
    return {};
  }
  return projectionPollDue(input, status) ? { pollAfterMs: PROJECTION_REPORT_POLL_MS } : {};
}

/**
 * How often a runtime's report is read while its wave is under way at the target or it checks a
 * preflight, by default: a Pod failing under the target must be seen within the soak.
 */
export const WORKLOAD_WATCH_MS = 10_000;
/**
 * At rest (with or without a policy): the least time between two reads of a runtime's workloads on
 * the passes made anyway; a runtime no pass visits is looked at after {@link WORKLOAD_SLOW_LOOK_MS}.
 */
export const WORKLOAD_REST_MS = 60_000;
/** The slow look at rest: a Degraded runtime shows in `rtb status` within this without any change. */
export const WORKLOAD_SLOW_LOOK_MS = 10 * 60_000;
/** The most of the samples' text kept in condition Degraded's message. */
const DEGRADED_MESSAGE_MAX_CHARS = 2048;

/** When a look at the workloads is due, and how soon the next one is. */
export interface WorkloadLook {
  /** The rollout reads this runtime often now: every `watchMs`. */
  readonly watch: boolean;
  /** How often while watched (the setting, default {@link WORKLOAD_WATCH_MS}). */
  readonly watchMs: number;
  readonly nowMs: number;
  /** When this process last read the runtime's report for its workloads (epoch ms); none yet: due. */
  readonly lastLookMs?: number;
}

/** Whether a look is due now (pure). */
export function workloadLookDue(look: WorkloadLook): boolean {
  if (look.lastLookMs === undefined) return true;
  return look.nowMs - look.lastLookMs >= (look.watch ? look.watchMs : WORKLOAD_REST_MS);
}

/**
 * Puts what the webhook reports of the Pods under the set applied into the status (pure): the
 * `workloads` figures, condition `Degraded`, the last `preflight`, the count of escaped Pods
 * (./escaped-pods-status.ts) and the customers' registry caches (./registry-cache-status.ts). A report without workloads
 * (a webhook that does not follow Pods) clears both; one without an entry for the set applied says
 * no Pod was changed under it.
 */
export function recordWorkloads(status: StatusBuilder, report: WebhookStatusReport): void {
  status.preflight(report.preflight);
  recordEscaped(status, report);
  recordRegistryCaches(status, report);
  const applied = status.build().appliedVersion;
  if (report.workloads === undefined || applied === undefined) {
    status.workloads(undefined).dropCondition('Degraded');
    return;
  }
  const h = workloadsSummaryOf(report.workloads, applied);
  status.workloads(h);
  if (h.failedPods > 0) {
    const samples = h.samples.map((x) => `${x.image ?? x.pod}: ${x.reason}`).join('; ');
    status.condition(
      'Degraded',
      'True',
      'ChangeCausedFailures',
      `${h.failedPods} Pod(s) failed under set ${applied} for a reason the change can cause (${h.failing} failing now)${samples ? `: ${samples}` : ''}`.slice(
        0,
        DEGRADED_MESSAGE_MAX_CHARS,
      ),
    );
  } else if (h.firstPodAt === undefined && h.pods === 0) {
    status.condition('Degraded', 'False', 'NoPods', `no Pod was changed under set ${applied} yet`);
  } else {
    status.condition(
      'Degraded',
      'False',
      'NoFailures',
      `${h.pods} Pod(s) under set ${applied}, ${h.started} started; none failed for a reason the change can cause`,
    );
  }
}

/**
 * Reads the webhook's report for its workloads and preflight when a look is due (one read serves
 * every look of the pass); says whether it read, and when to look again: soon while the rollout
 * watches the runtime, else the slow look. A failed read leaves the status as it was.
 */
export async function observeWorkloads(
  status: StatusBuilder,
  read: () => Promise<WebhookStatusReport>,
  look: WorkloadLook,
): Promise<{ looked: boolean; pollAfterMs: number }> {
  const pollAfterMs = look.watch ? look.watchMs : WORKLOAD_SLOW_LOOK_MS;
  if (!workloadLookDue(look)) return { looked: false, pollAfterMs };
  try {
    recordWorkloads(status, await read());
  } catch {
    return { looked: false, pollAfterMs };
  }
  return { looked: true, pollAfterMs };
}
