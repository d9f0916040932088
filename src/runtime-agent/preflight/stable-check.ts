/**
 * A preflight finding counts only for an image that resolves where the STABLE set sends it
 * (DESIGN §14): an image the stable location does not serve either (a tenant's private Docker Hub
 * repository, say, pulled with the tenant's own credentials or not at all) is that tenant's own
 * matter, not the candidate's, and one wave-0 namespace must not halt every rollout with it. Pure:
 * the runner probes what {@link stableTargets} names and hands the outcomes to
 * {@link confirmFindings}.
 */
import type { ImageRewriter } from '../../image/registry-rewrite.js';
import type { CheckedImage, CheckImagesResult } from './preflight-check.js';
import type { PlannedImage } from './preflight-plan.js';

/** Whether a probe's outcome is a finding against the candidate. */
function isFinding(c: CheckedImage): boolean {
  return c.outcome.result === 'missing' || c.outcome.result === 'refused';
}

/**
 * For each finding, where the stable set sends its original image (itself when the stable
 * overrides move nothing); one per original. An original that the stable rewrite cannot read is
 * probed as written.
 */
export function stableTargets(
  result: Pick<CheckImagesResult, 'checked'>,
  rewrite: ImageRewriter,
): PlannedImage[] {
  const out = new Map<string, PlannedImage>();
  for (const c of result.checked) {
    if (!isFinding(c) || out.has(c.image)) continue;
    let target: string | undefined;
    try {
      target = rewrite(c.image);
    } catch {
      target = undefined;
    }
    out.set(c.image, { image: c.image, target: target ?? c.image });
  }
  return [...out.values()];
}

/**
 * The candidate's result with only the findings whose original resolved at its stable location
 * (`stable`: the probes of {@link stableTargets}); the others, and findings the stable check did
 * not get to, move from checked to not checked (the report's `skipped`).
 */
export function confirmFindings(
  result: CheckImagesResult,
  stable: readonly CheckedImage[],
): CheckImagesResult {
  const resolves = new Set(stable.filter((s) => s.outcome.result === 'ok').map((s) => s.image));
  const checked = result.checked.filter((c) => !isFinding(c) || resolves.has(c.image));
  return {
    ...result,
    checked,
    notChecked: result.notChecked + (result.checked.length - checked.length),
  };
}
