import type { Logger } from 'pino';
import { type WebhookConfig } from '../api/webhook-config.js';
import { FEATURE_ADD_IMG_PULL_SECRET } from '../api/webhook-features.js';
import { selectFeatures } from '../mutation/features.js';
import type { LogRateLimit } from '../telemetry/log-rate-limit.js';
import { mutatePod, type MutatePodResult } from '../mutation/pipeline.js';
import { assertMutableSize } from '../mutation/pod-size.js';
import { rewrittenImages } from '../mutation/stamp-revision.js';
import type { AdmissionAnswer, AdmissionRequest } from './admission-review.js';
import type { AdmissionResult, WebhookMetrics } from './webhook-metrics.js';
import type { TrustBundleMount } from '../api/trust-bundle-capability.js';

/** Makes sure the pull Secret exists in a namespace; tells whether it is there. */
export interface PullSecretEnsurer {
  ensure(namespace: string, options: { dryRun: boolean }): Promise<boolean>;
}

/** What the admission handler reads from the rest of the process. */
export interface AdmissionContext {
  /**
   * The configuration in force as it applies on the runtime (../mutation/pipeline.ts
   * `configOnRuntime`), or undefined before the first good one arrived.
   */
  config(): WebhookConfig | undefined;
  /** Annotations of a namespace (from a cache); undefined when unknown. */
  namespaceAnnotations(name: string): Promise<Readonly<Record<string, string>> | undefined>;
  readonly pullSecret: PullSecretEnsurer;
  /** SHA-256 hex of the trust bundle in force (the Pods' stamp), undefined while unknown. */
  trustBundleHash?(): string | undefined;
  /** Whether the runtime can take the trust-bundle mount (../api/trust-bundle-capability.ts); mounted when absent. */
  trustBundleMount?(): TrustBundleMount;
  /** The set version of the configuration in force (DESIGN §11); undefined for a file. */
  revision?(): string | undefined;
  /**
   * Whether the last preflight found `image` missing at its registry, or refused with the set's
   * credentials: a Pod rewritten to it gets a warning.
   */
  knownMissing?(image: string): boolean;
  readonly metrics: WebhookMetrics;
  readonly logger: Logger;
  /** Per-request warnings are rate-limited per kind (a flood of bad requests writes a summary). */
  readonly logLimit: LogRateLimit;
  /** Answer `allowed: true` without a patch on an internal error (default), or refuse the request. */
  readonly failOpen: boolean;
}

// The per-request log lines, each its own kind for the rate limit.
const MUTATION_FAILED = 'mutation failed';
const PULL_SECRET_SKIPPED = 'pull Secret not available; no imagePullSecrets reference added';
const MANIPULATIONS_SKIPPED = 'some manipulations were skipped';
const NO_CONFIG = 'no configuration loaded yet; Pod admitted unchanged';

/** The answer and how it is counted. */
export interface HandledAdmission {
  readonly answer: AdmissionAnswer;
  readonly result: AdmissionResult;
}

/**
 * Decides the answer to one decoded AdmissionReview. Only Pods are mutated; anything else is
 * allowed untouched. An internal error never blocks a Pod unless configured to fail closed.
 */
export async function handleAdmission(
  req: AdmissionRequest,
  ctx: AdmissionContext,
): Promise<HandledAdmission> {
  const log = lazyLogger(ctx.logger, req.uid, req.namespace, req.name, req.operation);
  try {
    return await decide(req, ctx, log);
  } catch (error) {
    if (ctx.logLimit.allow(MUTATION_FAILED)) log().error({ err: error }, MUTATION_FAILED);
    const message = `rt-bootstrapper could not mutate this Pod: ${error instanceof Error ? error.message : String(error)}`;
    return ctx.failOpen
      ? { answer: { uid: req.uid, warnings: [message] }, result: 'error' }
      : { answer: { uid: req.uid, denied: message }, result: 'error' };
  }
}

// The request's logger is made on first use: most requests log nothing, and a pino child
// (bindings serialised, redaction set up) costs several microseconds each.
function lazyLogger(base: Logger, uid: string, namespace: string, name: string, op: string): () => Logger {
  let child: Logger | undefined;
  return () => (child ??= base.child({ uid, namespace, name, op }));
}

/** Counts and logs what a decision did. */
function report(
  result: MutatePodResult,
  config: WebhookConfig,
  ctx: AdmissionContext,
  log: () => Logger,
): void {
  // A Pod that needed no change counts no feature.
  const applied = result.patch.length === 0 ? [] : result.applied;
  if (result.pullSecretSkipped) {
    ctx.metrics.pullSecretMissing.inc();
    if (ctx.logLimit.allow(PULL_SECRET_SKIPPED))
      log().warn({ secret: config.imagePullSecret.name }, PULL_SECRET_SKIPPED);
  }
  if (result.warnings.length > 0 && ctx.logLimit.allow(MANIPULATIONS_SKIPPED))
    log().warn({ warnings: result.warnings }, MANIPULATIONS_SKIPPED);
  for (const feature of applied) ctx.metrics.mutations.inc({ feature });
  if (result.trustBundleSkipped !== undefined)
    ctx.metrics.trustBundleSkipped.inc({ reason: result.trustBundleSkipped });
  // Per-request success is debug: at thousands of Pods a minute info would drown the rest.
  if (applied.length > 0 && ctx.logger.isLevelEnabled('debug')) log().debug({ applied }, 'pod mutated');
}

async function decide(
  req: AdmissionRequest,
  ctx: AdmissionContext,
  log: () => Logger,
): Promise<HandledAdmission> {
  const unchanged = (warnings?: string[]): HandledAdmission => ({
    answer: { uid: req.uid, warnings },
    result: 'unchanged',
  });
  const isPod = req.resource.group === '' && req.resource.resource === 'pods';
  if (!isPod || (req.operation !== 'CREATE' && req.operation !== 'UPDATE') || !req.object) return unchanged();

  // Before any lookup: a Pod too large to mutate costs no API call either.
  assertMutableSize(req.object);
  const config = ctx.config();
  if (!config) {
    if (ctx.logLimit.allow(NO_CONFIG)) log().warn(NO_CONFIG);
    return unchanged(['rt-bootstrapper has no configuration yet; the Pod was not changed']);
  }
  const namespaceName = req.namespace === '' ? 'default' : req.namespace;
  const namespaceAnnotations = await ctx.namespaceAnnotations(namespaceName);
  const pod = req.object;

  // The Secret must exist before the Pod that references it is stored, so it is ensured
  // here, on the request path, and only for a new Pod that asks for it.
  let pullSecretAvailable = false;
  const ensuresPullSecret =
    req.operation === 'CREATE' &&
    req.subResource === '' &&
    selectFeatures({
      config,
      namespaceName,
      namespaceAnnotations,
      podAnnotations: pod.metadata?.annotations,
    }).has(FEATURE_ADD_IMG_PULL_SECRET);
  if (ensuresPullSecret)
    pullSecretAvailable = await ctx.pullSecret.ensure(namespaceName, { dryRun: req.dryRun });

  const trustBundleHash = ctx.trustBundleHash?.();
  const trustBundleMount = ctx.trustBundleMount?.();
  const result = mutatePod({
    pod,
    trustBundleHash,
    trustBundleMount,
    operation: req.operation,
    subResource: req.subResource,
    oldPod: req.oldObject,
    namespace: { name: namespaceName, annotations: namespaceAnnotations },
    config,
    pullSecretAvailable,
    revision: ctx.revision?.(),
  });
  report(result, config, ctx, log);
  const missing = ctx.knownMissing
    ? missingImages(pod, result, (image) => ctx.knownMissing?.(image) ?? false)
    : [];
  const all = [...result.warnings, ...missing];
  const warnings = all.length > 0 ? all : undefined;
  if (result.patch.length === 0) return { answer: { uid: req.uid, warnings }, result: 'unchanged' };
  return { answer: { uid: req.uid, patch: result.patch, warnings }, result: 'mutated' };
}

/** Warnings for images this request rewrote to a location the preflight found not to hold them. */
function missingImages(
  requested: MutatePodResult['pod'],
  result: MutatePodResult,
  knownMissing: (image: string) => boolean,
): string[] {
  if (result.patch.length === 0) return [];
  const out: string[] = [];
  for (const [name, { from, to }] of rewrittenImages(requested, result.pod))
    if (knownMissing(to))
      out.push(
        `container ${name}: image ${from} is rewritten to ${to}, which the registry did not serve when checked`,
      );
  return out;
}
