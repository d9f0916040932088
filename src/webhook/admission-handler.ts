import type { Logger } from 'pino';
import { type WebhookConfig } from '../api/webhook-config.js';
import { FEATURE_ADD_IMG_PULL_SECRET } from '../api/webhook-features.js';
import { selectFeatures } from '../mutation/features.js';
import type { LogRateLimit } from '../telemetry/log-rate-limit.js';
import { mutatePod } from '../mutation/pipeline.js';
import { assertMutableSize } from '../mutation/pod-size.js';
import {
  admissionResponseTemplate,
  type AdmissionAnswer,
  type AdmissionRequest,
} from './admission-review.js';
import type { AdmissionResult, WebhookMetrics } from './webhook-metrics.js';
import type { TrustBundleMount, TrustBundleSkipReason } from '../api/trust-bundle-capability.js';

/**
 * A value at once, or a promise of it when getting it takes I/O. The context's reads are
 * answered from caches almost always; returning the value itself then keeps a reused answer
 * (see {@link replayAdmission}) free of promise turns.
 */
export type Eventually<T> = T | Promise<T>;

/** Makes sure the pull Secret exists in a namespace; tells whether it is there. */
export interface PullSecretEnsurer {
  ensure(namespace: string, options: { dryRun: boolean }): Eventually<boolean>;
}

/** What the admission handler reads from the rest of the process. */
export interface AdmissionContext {
  /** The configuration in force, or undefined before the first good one arrived. */
  config(): WebhookConfig | undefined;
  /** Annotations of a namespace (from a cache); undefined when unknown. */
  namespaceAnnotations(name: string): Eventually<Readonly<Record<string, string>> | undefined>;
  readonly pullSecret: PullSecretEnsurer;
  /** SHA-256 hex of the trust bundle in force (the Pods' stamp), undefined while unknown. */
  trustBundleHash?(): string | undefined;
  /**
   * Whether the runtime can take the trust-bundle mount (../api/trust-bundle-capability.ts);
   * mounted when absent. Returns one of a few constant answers, compared by identity.
   */
  trustBundleMount?(): TrustBundleMount;
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
  /** What the answer was decided from, to answer an identical request again (see replay). */
  readonly record?: AdmissionRecord;
}

/**
 * A decided answer with everything outside the request body it depends on: the configuration
 * in force, the namespace's annotations, whether the pull Secret was there and the trust
 * bundle's hash. Reused only while all four are unchanged.
 */
export interface AdmissionRecord {
  readonly namespaceName: string;
  readonly name: string;
  readonly operation: AdmissionRequest['operation'];
  readonly dryRun: boolean;
  /** Whether the pull Secret had to be ensured (a new Pod that asks for it). */
  readonly ensuresPullSecret: boolean;
  readonly config: WebhookConfig;
  readonly namespaceAnnotations: Readonly<Record<string, string>> | undefined;
  readonly pullSecretAvailable: boolean;
  readonly trustBundleHash: string | undefined;
  readonly trustBundleMount: TrustBundleMount | undefined;
  readonly result: 'mutated' | 'unchanged';
  readonly outcome: Outcome;
  /** The encoded AdmissionReview response for a uid. */
  readonly respond: (uid: string) => Buffer;
}

/** What a decision reports besides its answer: counted and logged on every use. */
interface Outcome {
  readonly applied: readonly string[];
  readonly warnings: readonly string[];
  readonly pullSecretSkipped: boolean;
  /** Why the trust bundle was wanted and not mounted, if so. */
  readonly trustBundleSkipped: TrustBundleSkipReason | undefined;
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

/** A reused answer: the encoded AdmissionReview and how it is counted. */
export interface ReplayedAdmission {
  readonly body: Buffer;
  readonly result: AdmissionResult;
}

/**
 * Answers a request identical (uid aside) to the one `record` was decided from, doing the
 * decision's side effect (the pull Secret) and its counting and logging again; undefined when
 * anything the record depends on changed or failed, and the request must be decided anew.
 * Synchronous when the context answers from its caches.
 */
export function replayAdmission(
  record: AdmissionRecord,
  uid: string,
  ctx: AdmissionContext,
): Eventually<ReplayedAdmission | undefined> {
  try {
    if (ctx.config() !== record.config) return undefined;
    if (ctx.trustBundleHash?.() !== record.trustBundleHash) return undefined;
    if (ctx.trustBundleMount?.() !== record.trustBundleMount) return undefined;
    const annotations = ctx.namespaceAnnotations(record.namespaceName);
    // Any failure: the full path meets the same error and answers it.
    return annotations instanceof Promise
      ? annotations.then((a) => replayWith(a, record, uid, ctx)).catch(() => undefined)
      : replayWith(annotations, record, uid, ctx);
  } catch {
    return undefined;
  }
}

function replayWith(
  annotations: Readonly<Record<string, string>> | undefined,
  record: AdmissionRecord,
  uid: string,
  ctx: AdmissionContext,
): Eventually<ReplayedAdmission | undefined> {
  if (!sameAnnotations(annotations, record.namespaceAnnotations)) return undefined;
  if (!record.ensuresPullSecret) return replayed(record, uid, ctx);
  const available = ctx.pullSecret.ensure(record.namespaceName, { dryRun: record.dryRun });
  const decide = (now: boolean): ReplayedAdmission | undefined =>
    now === record.pullSecretAvailable ? replayed(record, uid, ctx) : undefined;
  return available instanceof Promise ? available.then(decide, () => undefined) : decide(available);
}

function replayed(record: AdmissionRecord, uid: string, ctx: AdmissionContext): ReplayedAdmission {
  const log = lazyLogger(ctx.logger, uid, record.namespaceName, record.name, record.operation);
  report(record.outcome, record.config, ctx, log);
  return { body: record.respond(uid), result: record.result };
}

// The request's logger is made on first use: most requests log nothing, and a pino child
// (bindings serialised, redaction set up) costs several microseconds each.
function lazyLogger(base: Logger, uid: string, namespace: string, name: string, op: string): () => Logger {
  let child: Logger | undefined;
  return () => (child ??= base.child({ uid, namespace, name, op }));
}

function sameAnnotations(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** Counts and logs what a decision did (the same for a first answer and a replayed one). */
function report(outcome: Outcome, config: WebhookConfig, ctx: AdmissionContext, log: () => Logger): void {
  if (outcome.pullSecretSkipped) {
    ctx.metrics.pullSecretMissing.inc();
    if (ctx.logLimit.allow(PULL_SECRET_SKIPPED))
      log().warn({ secret: config.imagePullSecret.name }, PULL_SECRET_SKIPPED);
  }
  if (outcome.warnings.length > 0 && ctx.logLimit.allow(MANIPULATIONS_SKIPPED))
    log().warn({ warnings: outcome.warnings }, MANIPULATIONS_SKIPPED);
  for (const feature of outcome.applied) ctx.metrics.mutations.inc(feature);
  if (outcome.trustBundleSkipped !== undefined)
    ctx.metrics.trustBundleSkipped.inc(outcome.trustBundleSkipped);
  // Per-request success is debug: at thousands of Pods a minute info would drown the rest.
  if (outcome.applied.length > 0 && ctx.logger.isLevelEnabled('debug'))
    log().debug({ applied: outcome.applied }, 'pod mutated');
}

async function decide(
  req: AdmissionRequest,
  ctx: AdmissionContext,
  log: () => Logger,
): Promise<HandledAdmission> {
  const unchanged = (warnings?: string[]): HandledAdmission => ({
    answer: { uid: req.uid, ...(warnings ? { warnings } : {}) },
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
  });
  const outcome: Outcome = {
    applied: result.patch.length === 0 ? [] : result.applied,
    warnings: result.warnings,
    pullSecretSkipped: result.pullSecretSkipped,
    trustBundleSkipped: result.trustBundleSkipped,
  };
  report(outcome, config, ctx, log);
  const warnings = result.warnings.length > 0 ? { warnings: [...result.warnings] } : {};
  const answer: Omit<AdmissionAnswer, 'uid'> =
    result.patch.length === 0 ? warnings : { patch: result.patch, ...warnings };
  const resultKind = result.patch.length === 0 ? 'unchanged' : 'mutated';
  return {
    answer: { uid: req.uid, ...answer },
    result: resultKind,
    record: {
      namespaceName,
      name: req.name,
      operation: req.operation,
      dryRun: req.dryRun,
      ensuresPullSecret,
      config,
      namespaceAnnotations,
      pullSecretAvailable,
      trustBundleHash,
      trustBundleMount,
      result: resultKind,
      outcome,
      respond: admissionResponseTemplate(answer),
    },
  };
}
