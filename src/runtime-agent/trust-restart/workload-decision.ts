/**
 * The restarter's pure core, second half: what to do with one workload that has stale Pods, as
 * read just before acting on it, and whether its rollout has completed. No I/O.
 */
import { CTB_HASH_ANNOTATION, RESTART_OPT_OUT_ANNOTATION } from '../../api/trust-stamp.js';
import type { WorkloadKind } from './restart-plan.js';

/** A Deployment, StatefulSet or DaemonSet, as far as the restarter reads it. */
export interface WorkloadObject {
  readonly metadata?: {
    readonly generation?: number;
    readonly uid?: string;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly spec?: {
    readonly replicas?: number;
    readonly updateStrategy?: { readonly type?: string };
    readonly template?: { readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> } };
  };
  readonly status?: {
    readonly observedGeneration?: number;
    readonly replicas?: number;
    readonly updatedReplicas?: number;
    readonly availableReplicas?: number;
    readonly currentRevision?: string;
    readonly updateRevision?: string;
    readonly desiredNumberScheduled?: number;
    readonly updatedNumberScheduled?: number;
    readonly numberAvailable?: number;
  };
}

/**
 * - `patch`: annotate the Pod template with the hash (the workload's own rollout restarts it);
 * - `rolling`: the template has the hash already (patched earlier, by this replica or another
 *   leader): never patched again, only waited for;
 * - `opted-out`: the owner or its template says `restart-on-trust-change: "false"`;
 * - `evict`: the workload's update strategy is OnDelete, so a template change restarts nothing;
 *   its stale Pods are evicted one by one instead.
 */
export type WorkloadAction = 'patch' | 'rolling' | 'opted-out' | 'evict';

/** What to do with `workload` for the bundle `hash` (pure). */
export function decideWorkload(kind: WorkloadKind, workload: WorkloadObject, hash: string): WorkloadAction {
  const own = workload.metadata?.annotations ?? {};
  const template = workload.spec?.template?.metadata?.annotations ?? {};
  if (own[RESTART_OPT_OUT_ANNOTATION] === 'false' || template[RESTART_OPT_OUT_ANNOTATION] === 'false')
    return 'opted-out';
  if (template[CTB_HASH_ANNOTATION] === hash) return 'rolling';
  if (kind !== 'Deployment' && workload.spec?.updateStrategy?.type === 'OnDelete') return 'evict';
  return 'patch';
}

/**
 * Whether the workload's rollout of its current template has completed (kubectl's rollout status):
 * its controller observed the latest generation, every replica runs the new template and is
 * available, and no old replica is left.
 */
export function rolloutComplete(kind: WorkloadKind, workload: WorkloadObject): boolean {
  const s = workload.status ?? {};
  if ((s.observedGeneration ?? 0) < (workload.metadata?.generation ?? 0)) return false;
  if (kind === 'DaemonSet') {
    const desired = s.desiredNumberScheduled ?? 0;
    return (s.updatedNumberScheduled ?? 0) >= desired && (s.numberAvailable ?? 0) >= desired;
  }
  const want = workload.spec?.replicas ?? 1;
  const updated = s.updatedReplicas ?? 0;
  const complete = updated >= want && (s.availableReplicas ?? 0) >= want && (s.replicas ?? 0) <= updated;
  if (kind === 'StatefulSet' && s.updateRevision !== undefined && s.currentRevision !== undefined)
    return complete && s.updateRevision === s.currentRevision;
  return complete;
}
