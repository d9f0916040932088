/**
 * Escaped Pods (DESIGN §13): running Pods in the webhook's scope that do not follow the set in
 * force, because they were admitted while no webhook answered (it fails open) or before the set
 * changed. The runtime agent counts them by reason and writes the count into the status ConfigMap
 * (./webhook-status.ts) under its own key and field manager; the KCP reads it into the
 * RuntimeBootstrapper's status (`escapedPods`, condition `EscapedPods`).
 */
import { z } from 'zod';

/**
 * Why a Pod does not follow the set in force (a Pod may have several):
 * - `unstamped`: the set would change it, and it carries no mark of our admission at all;
 * - `registry`: an image the set's overrides would rewrite;
 * - `pull-secret`: the pull-Secret reference the set adds is missing;
 * - `trust-bundle`: the trust-bundle volume or mount the set adds is missing;
 * - `env`: an environment variable the set adds (FIPS mode, landscape) is missing.
 */
export const ESCAPE_REASONS = ['unstamped', 'registry', 'pull-secret', 'trust-bundle', 'env'] as const;

/** One reason of {@link ESCAPE_REASONS}. */
export type EscapeReason = (typeof ESCAPE_REASONS)[number];

/** Key of the status ConfigMap that carries the report. */
export const ESCAPED_PODS_KEY = 'escapedPods';

/**
 * Field manager of {@link ESCAPED_PODS_KEY}: only the agent's leader writes it, and an apply of
 * another manager that leaves the key out must not remove it.
 */
export const ESCAPED_FIELD_MANAGER = 'rt-bootstrapper-webhook-escaped-pods';

/**
 * Annotation the repair puts on an owner's Pod template (its value names the set in force): the
 * owner's own rollout restarts its Pods, which admission then mutates. The same value changes
 * nothing, so a workload is restarted at most once per set.
 */
export const ESCAPED_REPAIR_ANNOTATION = 'rt-bootstrapper.kyma-project.io/escaped-repair';

const count = z.number().int().nonnegative();

const reportShape = z.object({
  /** Running Pods in scope that do not follow the set in force (each counted once). */
  pods: count,
  /** Of those, per reason (a Pod counts under each of its reasons). */
  reasons: z
    .object({
      unstamped: count.optional(),
      registry: count.optional(),
      'pull-secret': count.optional(),
      'trust-bundle': count.optional(),
      env: count.optional(),
    } satisfies Record<EscapeReason, unknown>)
    .strict(),
  /** Of {@link pods}, those without an owner: reported, never restarted. */
  bare: count,
  /** Running Pods looked at in the last count. */
  scanned: count,
  /** Whether the repair is on (owners are restarted). */
  repair: z.boolean(),
  /** Owners restarted by the repair since this replica leads. */
  restarted: count,
  /** The set the Pods were judged against (absent where the config is no set of the KCP's). */
  revision: z.string().max(64).optional(),
  /** When the count finished (RFC 3339). */
  at: z.string().max(40),
});

/** What the agent reports of the escaped Pods. */
export type EscapedPodsReport = z.infer<typeof reportShape>;

/** The most characters of the report the KCP parses (the agent's are under 400). */
export const ESCAPED_REPORT_MAX_CHARS = 2048;

/** Serializes a report for the status ConfigMap. */
export function writeEscaped(report: EscapedPodsReport): string {
  return JSON.stringify(report);
}

/**
 * Reads a report from the status ConfigMap; undefined when absent, over
 * {@link ESCAPED_REPORT_MAX_CHARS} (not parsed), or malformed.
 */
export function readEscaped(textValue: string | undefined): EscapedPodsReport | undefined {
  if (textValue === undefined || textValue.length > ESCAPED_REPORT_MAX_CHARS) return undefined;
  try {
    const parsed = reportShape.safeParse(JSON.parse(textValue));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
