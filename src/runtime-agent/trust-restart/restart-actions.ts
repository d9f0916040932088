/**
 * The restarter's I/O besides its Pod cache: its two writes, each with what makes it visible (the
 * Pod-template annotation on a workload: a counted restart and an Event on the owner; an
 * eviction: counted, an Event on the Pod, a refusal by a PodDisruptionBudget counted and logged;
 * never a Pod delete), the reads of ReplicaSets' owners, and the report of bare Pods.
 */
import type { Logger } from 'pino';
import type { EventRecorder } from '../../kube/event-recorder.js';
import type { EvictionResult, RestartCalls } from './restart-calls.js';
import type { RestartMetrics } from './restart-metrics.js';
import { replicaSetKey, type ReplicaSetOwner, type RestartScope, type WorkloadRef } from './restart-plan.js';
import type { OwnerRef, PodFacts } from './pod-facts.js';

/** Pacing settings. */
export interface RestartPacing {
  /** Restarts under way at once (at least 1). */
  readonly concurrency: number;
  /** After a bundle change, before the first restart. */
  readonly delayMs: number;
  /** A restart not completed after this is reported and the next goes on. */
  readonly deadlineMs: number;
}

/** What the restarter's work uses. */
export interface WorkContext {
  readonly calls: RestartCalls;
  readonly metrics: RestartMetrics;
  readonly events: EventRecorder;
  readonly logger: Logger;
  readonly pacing: RestartPacing;
  /** How often a restart under way is looked at besides its Pods' changes (default 2 s). */
  readonly pollMs?: number;
  /** Where the restarter holds restart rights (default everywhere; `--restart-namespaces`). */
  readonly mayRestart?: RestartScope;
}

/** Restarts `workload` through its Pod template (one server-side apply of the hash). */
export async function restartWorkload(
  c: WorkContext,
  workload: WorkloadRef,
  uid: string | undefined,
  stalePods: number,
  hash: string,
): Promise<void> {
  await c.calls.annotateTemplate(workload, hash);
  c.metrics.ownersRestarted.inc({ kind: workload.kind });
  const key = `${workload.kind}/${workload.namespace}/${workload.name}`;
  c.logger.info({ target: key, stalePods }, 'restarting for the new trust bundle');
  c.events.record({
    regarding: {
      apiVersion: 'apps/v1',
      kind: workload.kind,
      name: workload.name,
      namespace: workload.namespace,
      uid,
    },
    type: 'Normal',
    reason: 'TrustBundleChanged',
    action: 'Restart',
    note: `${stalePods} Pod(s) run an older trust bundle; restarting through the Pod template (bundle ${hash.slice(0, 12)})`,
  });
}

/** Evicts `pod` through the Eviction API; a refusal is counted and logged, never forced. */
export async function evictPod(c: WorkContext, pod: PodFacts, hash: string): Promise<EvictionResult> {
  const result = await c.calls.evict(pod.namespace, pod.name);
  const target = `Pod/${pod.namespace}/${pod.name}`;
  if (result === 'blocked') {
    c.metrics.evictionsBlocked.inc();
    c.logger.warn({ target }, 'eviction refused by a PodDisruptionBudget; retrying with backoff');
  } else if (result === 'evicted') {
    c.metrics.evictions.inc();
    c.events.record({
      regarding: { apiVersion: 'v1', kind: 'Pod', name: pod.name, namespace: pod.namespace, uid: pod.uid },
      type: 'Normal',
      reason: 'TrustBundleChanged',
      action: 'Evict',
      note: `the Pod runs an older trust bundle and its owner cannot roll it; evicted (bundle ${hash.slice(0, 12)})`,
    });
  }
  return result;
}

/** Bare Pods are never touched: each is reported once per bundle (`reported` holds their keys). */
export function reportBare(c: WorkContext, bare: readonly PodFacts[], reported: Set<string>): void {
  for (const pod of bare) {
    const target = `Pod/${pod.namespace}/${pod.name}`;
    if (reported.has(target)) continue;
    reported.add(target);
    c.logger.warn(
      { target },
      'a Pod without an owner runs an older trust bundle; not restarted (recreate it to pick up the new bundle)',
    );
  }
}

/**
 * Stale Pods in namespaces without restart rights are never touched: each such namespace is
 * reported once per bundle (`reported` holds the namespaces), with its count then.
 */
export function reportWithoutRights(
  c: WorkContext,
  withoutRights: readonly PodFacts[],
  reported: Set<string>,
): void {
  const counts = new Map<string, number>();
  for (const pod of withoutRights) counts.set(pod.namespace, (counts.get(pod.namespace) ?? 0) + 1);
  for (const [namespace, stalePods] of counts) {
    if (reported.has(namespace)) continue;
    reported.add(namespace);
    c.logger.warn(
      { namespace, stalePods },
      'Pods run an older trust bundle in a namespace without restart rights (not in --restart-namespaces); not restarted',
    );
  }
}

const REPLICA_SET_READS_AT_ONCE = 8;

/** Reads the owner of each ReplicaSet in `wanted` into `known`, a few at once. */
export async function resolveReplicaSets(
  c: WorkContext,
  wanted: readonly { readonly namespace: string; readonly owner: OwnerRef }[],
  known: Map<string, ReplicaSetOwner>,
): Promise<void> {
  for (let i = 0; i < wanted.length; i += REPLICA_SET_READS_AT_ONCE)
    await Promise.all(
      wanted.slice(i, i + REPLICA_SET_READS_AT_ONCE).map(async ({ namespace, owner }) => {
        const found = await c.calls.replicaSetOwner(namespace, owner);
        if (found !== undefined) known.set(replicaSetKey(namespace, owner), found);
      }),
    );
}
