import type { Logger } from 'pino';
import { FEATURE_ADD_IMG_PULL_SECRET, type WebhookConfig } from '../api/webhook-config.js';
import { selectFeatures } from '../mutation/features.js';
import { mutatePod } from '../mutation/pipeline.js';
import type { AdmissionAnswer, AdmissionRequest } from './admission-review.js';
import type { AdmissionResult, WebhookMetrics } from './webhook-metrics.js';

/** Makes sure the pull Secret exists in a namespace; resolves whether it is there. */
export interface PullSecretEnsurer {
  ensure(namespace: string, options: { dryRun: boolean }): Promise<boolean>;
}

/** What the admission handler reads from the rest of the process. */
export interface AdmissionContext {
  /** The configuration in force, or undefined before the first good one arrived. */
  config(): WebhookConfig | undefined;
  /** Annotations of a namespace (from a cache); undefined when unknown. */
  namespaceAnnotations(name: string): Promise<Readonly<Record<string, string>> | undefined>;
  readonly pullSecret: PullSecretEnsurer;
  readonly metrics: WebhookMetrics;
  readonly logger: Logger;
  /** Answer `allowed: true` without a patch on an internal error (default), or refuse the request. */
  readonly failOpen: boolean;
}

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
  // The request's logger is made on first use: most requests log nothing, and a pino child
  // (bindings serialised, redaction set up) costs several microseconds each.
  let child: Logger | undefined;
  const log = (): Logger =>
    (child ??= ctx.logger.child({
      uid: req.uid,
      namespace: req.namespace,
      name: req.name,
      op: req.operation,
    }));
  try {
    return await decide(req, ctx, log);
  } catch (error) {
    log().error({ err: error }, 'mutation failed');
    const message = `rt-bootstrapper could not mutate this Pod: ${error instanceof Error ? error.message : String(error)}`;
    return ctx.failOpen
      ? { answer: { uid: req.uid, warnings: [message] }, result: 'error' }
      : { answer: { uid: req.uid, denied: message }, result: 'error' };
  }
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

  const config = ctx.config();
  if (!config) {
    log().warn('no configuration loaded yet; Pod admitted unchanged');
    return unchanged(['rt-bootstrapper has no configuration yet; the Pod was not changed']);
  }
  const namespaceName = req.namespace === '' ? 'default' : req.namespace;
  const namespaceAnnotations = await ctx.namespaceAnnotations(namespaceName);
  const pod = req.object;

  // The Secret must exist before the Pod that references it is stored, so it is ensured
  // here, on the request path, and only for a new Pod that asks for it.
  let pullSecretAvailable = false;
  if (req.operation === 'CREATE' && req.subResource === '') {
    const wanted = selectFeatures({
      config,
      namespaceName,
      namespaceAnnotations,
      podAnnotations: pod.metadata?.annotations,
    }).has(FEATURE_ADD_IMG_PULL_SECRET);
    if (wanted) pullSecretAvailable = await ctx.pullSecret.ensure(namespaceName, { dryRun: req.dryRun });
  }

  const result = mutatePod({
    pod,
    operation: req.operation,
    subResource: req.subResource,
    oldPod: req.oldObject,
    namespace: { name: namespaceName, annotations: namespaceAnnotations },
    config,
    pullSecretAvailable,
  });
  if (result.pullSecretSkipped) {
    ctx.metrics.pullSecretMissing.inc();
    log().warn(
      { secret: config.imagePullSecret.name },
      'pull Secret source missing; no imagePullSecrets reference added',
    );
  }
  if (result.warnings.length > 0)
    log().warn({ warnings: result.warnings }, 'some manipulations were skipped');
  if (result.patch.length === 0)
    return unchanged(result.warnings.length > 0 ? [...result.warnings] : undefined);
  for (const feature of result.applied) ctx.metrics.mutations.inc({ feature });
  // Per-request success is debug: at thousands of Pods a minute info would drown the rest.
  if (ctx.logger.isLevelEnabled('debug')) log().debug({ applied: result.applied }, 'pod mutated');
  return {
    answer: {
      uid: req.uid,
      patch: result.patch,
      ...(result.warnings.length > 0 ? { warnings: [...result.warnings] } : {}),
    },
    result: 'mutated',
  };
}
