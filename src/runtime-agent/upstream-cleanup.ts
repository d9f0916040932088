/**
 * Removes what an upstream install left on the runtime (../api/upstream-leftovers.ts) once our webhook
 * serves: each listed object is read, checked to be upstream's, and deleted with its uid and
 * resourceVersion as preconditions (so an object replaced meanwhile is never deleted blindly).
 * Not found and "that resource type is not installed" count as done; anything else is logged
 * and retried later.
 */
import { backoffDelay, type BackoffOptions } from '../kube/backoff.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { KubeApiError, statusCodeOf } from '../kube/kube-errors.js';
import { kubeRequest } from '../kube/kube-request.js';
import {
  UPSTREAM_ANNOTATIONS,
  UPSTREAM_LEFTOVERS,
  type FoundObject,
  type UpstreamAnnotation,
  type UpstreamLeftover,
} from '../api/upstream-leftovers.js';

/** The logger calls the cleanup makes; pino's `Logger` fits. */
export interface CleanupLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * What became of one listed object: `removed`; `absent` (not there, or the annotation not set);
 * `not-installed` (its API is not served here); `kept` (an object of that name that is not
 * upstream's); `failed` (retried later).
 */
export type CleanupOutcome = 'removed' | 'absent' | 'not-installed' | 'kept' | 'failed';

/** The result for one listed object or annotation. */
export interface CleanupResult {
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  readonly outcome: CleanupOutcome;
  /** Why it failed (an API error's message; never object contents). */
  readonly error?: string;
}

/** What one cleanup pass works through (the fixed lists by default; tests may narrow them). */
export interface CleanupLists {
  readonly leftovers?: readonly UpstreamLeftover[];
  readonly annotations?: readonly UpstreamAnnotation[];
}

/** Options of {@link startUpstreamCleanup}. */
export interface CleanupOptions extends CleanupLists {
  /** Delays between passes while something fails (default 5 s doubling to 5 min, jittered). */
  readonly retry?: BackoffOptions;
}

const DEFAULT_RETRY: BackoffOptions = { baseMs: 5_000, maxMs: 300_000, jitter: 0.2 };

/** How a result names an annotation (kind and name), so retries can find it again. */
const annotationId = (a: UpstreamAnnotation): { kind: string; name: string } => ({
  kind: `annotation ${a.annotation} of ${a.resource}`,
  name: a.name,
});

/** Per-request time bound. */
const REQUEST_TIMEOUT_MS = 10_000;

function resourcePath(apiVersion: string, resource: string, name: string, namespace?: string): string {
  const root = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
  const ns = namespace === undefined ? '' : `/namespaces/${encodeURIComponent(namespace)}`;
  return `${root}${ns}/${resource}/${encodeURIComponent(name)}`;
}

/** A 404 for the object itself names it in the Status; one for an unserved resource type does not. */
function notFound(error: unknown, name: string): 'absent' | 'not-installed' | undefined {
  if (statusCodeOf(error) !== 404) return undefined;
  return error instanceof KubeApiError && error.status?.details?.name === name ? 'absent' : 'not-installed';
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

async function removeLeftover(
  access: ClusterAccess,
  logger: CleanupLogger,
  l: UpstreamLeftover,
): Promise<CleanupResult> {
  const id = { kind: l.kind, namespace: l.namespace, name: l.name };
  const path = resourcePath(l.apiVersion, l.resource, l.name, l.namespace);
  let found: FoundObject;
  try {
    found = await kubeRequest<FoundObject>(access, { method: 'GET', path, timeoutMs: REQUEST_TIMEOUT_MS });
  } catch (error) {
    const missing = notFound(error, l.name);
    if (missing) return { ...id, outcome: missing };
    logger.warn({ ...id, err: messageOf(error) }, 'could not read an upstream leftover; retrying later');
    return { ...id, outcome: 'failed', error: messageOf(error) };
  }
  if (!l.isUpstreams(found)) {
    logger.info(id, "kept an object named like an upstream leftover: it is not upstream's");
    return { ...id, outcome: 'kept' };
  }
  const meta = (found.metadata ?? {}) as { uid?: string; resourceVersion?: string };
  try {
    await kubeRequest(access, {
      method: 'DELETE',
      path,
      body: {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        preconditions: { uid: meta.uid, resourceVersion: meta.resourceVersion },
      },
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
  } catch (error) {
    if (notFound(error, l.name)) return { ...id, outcome: 'absent' };
    logger.warn({ ...id, err: messageOf(error) }, 'could not remove an upstream leftover; retrying later');
    return { ...id, outcome: 'failed', error: messageOf(error) };
  }
  logger.info({ ...id, reason: l.reason }, 'removed an upstream leftover');
  return { ...id, outcome: 'removed' };
}

async function removeAnnotation(
  access: ClusterAccess,
  logger: CleanupLogger,
  a: UpstreamAnnotation,
): Promise<CleanupResult> {
  const id = annotationId(a);
  const path = resourcePath(a.apiVersion, a.resource, a.name);
  try {
    const found = await kubeRequest<FoundObject>(access, {
      method: 'GET',
      path,
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    const meta = (found.metadata ?? {}) as {
      resourceVersion?: string;
      annotations?: Record<string, string>;
    };
    if (meta.annotations?.[a.annotation] === undefined) return { ...id, outcome: 'absent' };
    // A merge patch carrying the resourceVersion fails with a conflict if the object changed.
    await kubeRequest(access, {
      method: 'PATCH',
      path,
      body: { metadata: { resourceVersion: meta.resourceVersion, annotations: { [a.annotation]: null } } },
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
  } catch (error) {
    const missing = notFound(error, a.name);
    if (missing) return { ...id, outcome: missing };
    logger.warn({ ...id, err: messageOf(error) }, 'could not remove an upstream annotation; retrying later');
    return { ...id, outcome: 'failed', error: messageOf(error) };
  }
  logger.info({ ...id, reason: a.reason }, 'removed an upstream annotation');
  return { ...id, outcome: 'removed' };
}

/**
 * One pass over the fixed lists, in order (bindings before their roles): one result per listed
 * object and annotation. Never throws; `failed` results are for the caller to retry.
 */
export async function removeUpstreamLeftovers(
  access: ClusterAccess,
  logger: CleanupLogger,
  lists: CleanupLists = {},
): Promise<CleanupResult[]> {
  const results: CleanupResult[] = [];
  for (const l of lists.leftovers ?? UPSTREAM_LEFTOVERS)
    results.push(await removeLeftover(access, logger, l));
  for (const a of lists.annotations ?? UPSTREAM_ANNOTATIONS)
    results.push(await removeAnnotation(access, logger, a));
  return results;
}

/** A running cleanup: passes repeat, with backoff, while any listed object failed. */
export interface UpstreamCleanup {
  /** Resolves with the last pass's results once nothing failed, or once stopped. */
  readonly done: Promise<CleanupResult[]>;
  stop(): void;
}

/**
 * Runs {@link removeUpstreamLeftovers} until no listed object fails, retrying only the failed
 * ones with backoff; meant to start once the webhook serves. The result of every listed object
 * is its last one.
 */
export function startUpstreamCleanup(
  access: ClusterAccess,
  logger: CleanupLogger,
  options: CleanupOptions = {},
): UpstreamCleanup {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
      timer.unref();
    });
  const settled = new Map<string, CleanupResult>();
  const run = async (): Promise<CleanupResult[]> => {
    let leftovers = options.leftovers ?? UPSTREAM_LEFTOVERS;
    let annotations = options.annotations ?? UPSTREAM_ANNOTATIONS;
    const key = (r: Pick<CleanupResult, 'kind' | 'namespace' | 'name'>): string =>
      `${r.kind}/${r.namespace ?? ''}/${r.name}`;
    for (let attempt = 0; !stopped; attempt++) {
      const results = await removeUpstreamLeftovers(access, logger, { leftovers, annotations });
      for (const r of results) settled.set(key(r), r);
      const failed = new Set(results.filter((r) => r.outcome === 'failed').map(key));
      if (failed.size === 0) break;
      leftovers = leftovers.filter((l) => failed.has(key(l)));
      annotations = annotations.filter((a) => failed.has(key(annotationId(a))));
      await sleep(backoffDelay(attempt, options.retry ?? DEFAULT_RETRY));
    }
    return [...settled.values()];
  };
  return {
    // Never rejects (a pass never throws; a throwing logger ends the loop with what is known).
    done: run().catch(() => [...settled.values()]),
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
    },
  };
}
