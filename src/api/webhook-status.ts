/**
 * The webhook's report of the configuration it serves, a small ConfigMap beside it on the
 * runtime (direct mode only): the KCP controller reads it to gate a rollout on what the webhook
 * really loaded, and on whether it refused the set it was given.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';

/** Name of the report ConfigMap, in the webhook's namespace. */
export const WEBHOOK_STATUS_CONFIG_MAP = 'rt-bootstrapper-webhook-status';

/** What the webhook reports (no content of the configuration itself: versions and field paths). */
export interface WebhookStatusReport {
  /** The set version of the ConfigMap whose text is in force. */
  readonly loadedVersion?: string;
  /** The set version of the last text refused (cleared when a later one is taken). */
  readonly refusedVersion?: string;
  /** Why it was refused: the offending fields and what is wrong with them. */
  readonly refusal?: string;
}

/** The report as ConfigMap data. */
export function reportData(report: WebhookStatusReport): Record<string, string> {
  return {
    ...(report.loadedVersion !== undefined ? { loadedVersion: report.loadedVersion } : {}),
    ...(report.refusedVersion !== undefined ? { refusedVersion: report.refusedVersion } : {}),
    ...(report.refusal !== undefined ? { refusal: report.refusal } : {}),
  };
}

/** The report a ConfigMap holds (empty when there is none). */
export function readReport(cm: V1ConfigMap | undefined): WebhookStatusReport {
  const d = cm?.data ?? {};
  return {
    ...(d.loadedVersion !== undefined ? { loadedVersion: d.loadedVersion } : {}),
    ...(d.refusedVersion !== undefined ? { refusedVersion: d.refusedVersion } : {}),
    ...(d.refusal !== undefined ? { refusal: d.refusal } : {}),
  };
}
