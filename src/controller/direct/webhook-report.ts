import type { WebhookStatusReport } from '../../api/webhook-status.js';
import type { StatusBuilder } from './status-builder.js';
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
  const servedVersion = version(report.loadedVersion);
  const refusedVersion = version(report.refusedVersion);
  const refusal = report.refusal?.slice(0, REFUSAL_MAX_CHARS);
  // Absent, not undefined: the status patch sends null (removal) only for fields left out.
  return {
    ...(servedVersion !== undefined ? { servedVersion } : {}),
    ...(refusedVersion !== undefined ? { refusedVersion } : {}),
    ...(refusal !== undefined ? { refusal } : {}),
  };
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
