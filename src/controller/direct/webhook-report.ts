import type { WebhookStatusReport } from '../../api/webhook-status.js';
import type { StatusBuilder } from './status-builder.js';

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
  status.served({
    ...(report.loadedVersion !== undefined ? { servedVersion: report.loadedVersion } : {}),
    ...(report.refusedVersion !== undefined ? { refusedVersion: report.refusedVersion } : {}),
    ...(report.refusal !== undefined ? { refusal: report.refusal } : {}),
  });
  return report.loadedVersion === applied || report.refusedVersion === applied
    ? {}
    : { pollAfterMs: REPORT_POLL_MS };
}
