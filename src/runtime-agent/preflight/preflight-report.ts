/**
 * The preflight's report as the status ConfigMap carries it (../../api/workload-health.ts
 * PreflightReport): counts of every outcome, and a few samples of what failed.
 */
import {
  MAX_FAILURE_SAMPLES,
  type PreflightReport,
  type PreflightSample,
} from '../../api/workload-health.js';
import type { CheckImagesResult } from './preflight-check.js';
import type { PreflightPlan } from './preflight-plan.js';

// The contract's bounds of a sample's fields.
const MAX_IMAGE = 1024;
const MAX_DETAIL = 512;

const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

// Samples show what most needs fixing first: an image the mirror lacks, then refused credentials.
const SAMPLE_ORDER: Readonly<Record<PreflightSample['result'], number>> = {
  missing: 0,
  refused: 1,
  unreachable: 2,
};

/** The report of a preflight that has started and found nothing yet. */
export function runningReport(version: string, startedAt: Date): PreflightReport {
  return {
    version,
    phase: 'running',
    checked: 0,
    skipped: 0,
    missing: 0,
    refused: 0,
    unreachable: 0,
    samples: [],
    startedAt: startedAt.toISOString(),
  };
}

/**
 * The report of a finished preflight: images checked (whatever the outcome), skipped (the count
 * bound's and those the time budget left), the counts of each failure and up to
 * MAX_FAILURE_SAMPLES samples, missing ones first.
 */
export function doneReport(
  version: string,
  plan: Pick<PreflightPlan, 'skipped'>,
  result: Pick<CheckImagesResult, 'checked' | 'notChecked'>,
  startedAt: Date,
  finishedAt: Date,
): PreflightReport {
  const counts = { missing: 0, refused: 0, unreachable: 0 };
  const failed: PreflightSample[] = [];
  for (const c of result.checked) {
    const r = c.outcome.result;
    if (r === 'ok') continue;
    counts[r]++;
    failed.push({
      image: cut(c.image, MAX_IMAGE),
      target: cut(c.target, MAX_IMAGE),
      result: r,
      detail: c.outcome.detail === undefined ? undefined : cut(c.outcome.detail, MAX_DETAIL),
    });
  }
  // A stable sort: within one kind, plan order (sorted by target).
  failed.sort((a, b) => SAMPLE_ORDER[a.result] - SAMPLE_ORDER[b.result]);
  return {
    version,
    phase: 'done',
    checked: result.checked.length,
    skipped: plan.skipped + result.notChecked,
    ...counts,
    samples: failed.slice(0, MAX_FAILURE_SAMPLES),
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
  };
}
