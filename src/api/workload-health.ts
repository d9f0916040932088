/**
 * Workload health of a revision (DESIGN §11): what a runtime's webhook learns about the Pods it
 * changed, per revision, and what its preflight found out about a candidate set's registries.
 * Both sides agree on these names and shapes: the webhook writes them into its status ConfigMap
 * (./webhook-status.ts), the KCP reads them into the RuntimeBootstrapper's status and the rollout.
 */
import { z } from 'zod';

/** Annotation on a Pod we changed: the set version it was changed under. */
export const REVISION_ANNOTATION = 'rt-bootstrapper.kyma-project.io/revision';

/**
 * Label with the same value: the webhook follows the Pods it changed with a label selector, so
 * the API server filters and the follower's memory does not grow with the cluster.
 */
export const REVISION_LABEL = 'rt-bootstrapper.kyma-project.io/revision';

/**
 * Annotation on a Pod whose images we rewrote: a JSON object of container name → the image as the
 * Pod asked for it. A pull failure of such a container is the change's; the preflight rewrites the
 * original under a candidate's overrides.
 */
export const ORIGINAL_IMAGES_ANNOTATION = 'rt-bootstrapper.kyma-project.io/original-images';

/** Kinds of failures a change can cause. */
export type WorkloadFailureKind =
  /** An image we rewrote does not pull (ErrImagePull, ImagePullBackOff, InvalidImageName). */
  | 'image-pull'
  /** The Pod references our pull Secret and it does not exist in the Pod's namespace. */
  | 'pull-secret-missing'
  /** A container cannot be created or started with our mount. */
  | 'mount';

/** Keys of original images that ran, kept per revision in a report. */
export const MAX_RAN_ORIGINALS = 200;
/** Original images of failures not proven regressions, kept per revision (most failed Pods first). */
export const MAX_UNPROVEN_ORIGINALS = 16;
/** The most characters of an original image's key (the webhook's are 16 hex characters). */
export const MAX_ORIGINAL_KEY_CHARS = 64;

/** Samples kept per revision (counts are exact; samples show what failed). */
export const MAX_FAILURE_SAMPLES = 5;
/** Revisions kept in a report: the newest ones by when their first Pod was seen. */
export const MAX_REPORTED_REVISIONS = 5;

const text = (max: number) => z.string().max(max);

const sampleShape = z.object({
  kind: z.enum(['image-pull', 'pull-secret-missing', 'mount']),
  /** `namespace/name` of the Pod. */
  pod: text(320),
  container: text(253).optional(),
  image: text(1024).optional(),
  registry: text(512).optional(),
  /** The kubelet's reason (ErrImagePull, …) or ours (pull Secret missing). */
  reason: text(128),
  /** The kubelet's message, credentials redacted, cut short. */
  message: text(512).optional(),
  /** When the follower first saw this failure (RFC 3339). */
  at: text(40),
});

/** One failure the change can cause, as the webhook saw it. */
export type WorkloadFailureSample = z.infer<typeof sampleShape>;

const revisionShape = z.object({
  /** Pods under the revision that exist now. */
  pods: z.number().int().nonnegative(),
  /** Of those, Pods whose containers all started at least once. */
  started: z.number().int().nonnegative(),
  /** Pods failing now for a reason the change can cause. */
  failing: z.number().int().nonnegative(),
  /** Distinct Pods ever counted failing under the revision (a deleted one stays counted). */
  failedPods: z.number().int().nonnegative(),
  /** When the first Pod under the revision was seen (RFC 3339). */
  firstPodAt: text(40).optional(),
  samples: z.array(sampleShape).max(MAX_FAILURE_SAMPLES),
  /**
   * Of `failedPods`, those that are regressions proven on this runtime: the original image that
   * failed ran under another set here (DESIGN §14). Absent in reports of releases before it.
   */
  regressions: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
  /**
   * Failures not proven here, by the key of their original image and the Pods that failed on it:
   * the KCP counts them where the original ran under an earlier set on another runtime.
   */
  unproven: z
    .array(
      z.object({
        image: text(MAX_ORIGINAL_KEY_CHARS),
        pods: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
      }),
    )
    .max(MAX_UNPROVEN_ORIGINALS)
    .optional(),
  /** Keys of original images whose containers started under the revision (a bounded sample). */
  ran: z.array(text(MAX_ORIGINAL_KEY_CHARS)).max(MAX_RAN_ORIGINALS).optional(),
});

/** What the webhook knows about the Pods it changed under one revision. */
export type RevisionHealth = z.infer<typeof revisionShape>;

const workloadsShape = z
  .record(text(64), revisionShape)
  .refine(
    (r) => Object.keys(r).length <= MAX_REPORTED_REVISIONS,
    `at most ${MAX_REPORTED_REVISIONS} revisions`,
  );

/** Per revision (set version), the Pods changed under it. */
export type WorkloadHealthReport = Readonly<Record<string, RevisionHealth>>;

const preflightSampleShape = z.object({
  /** The image as Pods run it now (its original, for a Pod we rewrote). */
  image: text(1024),
  /** Where the candidate's overrides would send it. */
  target: text(1024),
  /** `missing` (manifest unknown), `refused` (401/403 with the candidate's credentials), `unreachable`. */
  result: z.enum(['missing', 'refused', 'unreachable']),
  detail: text(512).optional(),
});

/** One image the preflight could not resolve at its new location. */
export type PreflightSample = z.infer<typeof preflightSampleShape>;

const preflightShape = z.object({
  /** The candidate set version checked. */
  version: text(64),
  /** `running` while checking; `done` when every image was checked or the budget ended it. */
  phase: z.enum(['running', 'done']),
  /** Images the candidate would move and that were checked (resolved or not). */
  checked: z.number().int().nonnegative(),
  /** Images it would move that were not checked because a bound (count or time) was reached. */
  skipped: z.number().int().nonnegative(),
  missing: z.number().int().nonnegative(),
  refused: z.number().int().nonnegative(),
  unreachable: z.number().int().nonnegative(),
  samples: z.array(preflightSampleShape).max(MAX_FAILURE_SAMPLES),
  startedAt: text(40),
  finishedAt: text(40).optional(),
});

/** What the preflight of a candidate set found (DESIGN §11). */
export type PreflightReport = z.infer<typeof preflightShape>;

/** Whether a finished preflight found an image its candidate cannot serve. */
export function preflightFailed(p: PreflightReport): boolean {
  return p.phase === 'done' && p.missing + p.refused > 0;
}

/** Serializes a workload report for the status ConfigMap. */
export function writeWorkloads(report: WorkloadHealthReport): string {
  return JSON.stringify(report);
}

/** Reads a workload report from the status ConfigMap; undefined when absent or malformed. */
export function readWorkloads(textValue: string | undefined): WorkloadHealthReport | undefined {
  if (textValue === undefined) return undefined;
  try {
    const parsed = workloadsShape.safeParse(JSON.parse(textValue));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Serializes a preflight report for the status ConfigMap. */
export function writePreflight(report: PreflightReport): string {
  return JSON.stringify(report);
}

/** Reads a preflight report from the status ConfigMap; undefined when absent or malformed. */
export function readPreflight(textValue: string | undefined): PreflightReport | undefined {
  if (textValue === undefined) return undefined;
  try {
    const parsed = preflightShape.safeParse(JSON.parse(textValue));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The candidate set a canary runtime's webhook checks before the set reaches any wave: a Secret
 * `kyma-system/rt-bootstrapper-preflight` the KCP writes on canary runtimes (a Secret, since it
 * holds the candidate's pull credentials). Keys below; annotation `set-version` names the
 * candidate (./runtime-bootstrapper.ts SET_VERSION_ANNOTATION).
 */
export const PREFLIGHT_SECRET = 'rt-bootstrapper-preflight';
/** The candidate webhook configuration JSON (the config ConfigMap's key's text). */
export const PREFLIGHT_CONFIG_KEY = 'rt-bootstrapper-config.json';
/** The candidate pull Secret's `.dockerconfigjson`. */
export const PREFLIGHT_DOCKER_CONFIG_KEY = '.dockerconfigjson';

/** Keys of the status ConfigMap that carry these reports. */
export const WORKLOADS_KEY = 'workloads';
/**
 * The webhook's own key beside the report (never read by the KCP): the overrides of the revisions
 * it served, so a webhook started later still checks Pods of the set before against their rules.
 */
export const REVISION_RULES_KEY = 'revisionRules';
export const PREFLIGHT_KEY = 'preflight';

/**
 * Field manager of the workload key: only the replica that leads writes it, and under the
 * report's own manager the other replicas' applies (which do not hold this key) would remove it.
 * The preflight key has its own ({@link PREFLIGHT_FIELD_MANAGER}).
 */
export const WORKLOAD_FIELD_MANAGER = 'rt-bootstrapper-webhook-workloads';
/**
 * Field manager of the preflight key alone: the workload report and the preflight are written by
 * different parts of the webhook, and an apply under one manager that leaves out the other's key
 * would remove it.
 */
export const PREFLIGHT_FIELD_MANAGER = 'rt-bootstrapper-webhook-preflight';
