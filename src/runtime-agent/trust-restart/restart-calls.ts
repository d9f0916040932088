/**
 * The restarter's API calls, raw and time-bounded (no client-node code in the webhook): read a
 * ReplicaSet's owner and a workload, annotate a workload's Pod template by server-side apply
 * under the restarter's own field manager, evict a Pod, label an upstream-stamped Pod. Nothing
 * here deletes.
 */
import {
  CTB_HASH_ANNOTATION,
  CTB_MOUNTED_LABEL,
  CTB_MOUNTED_VALUE,
  RESTARTER_FIELD_MANAGER,
} from '../../api/trust-stamp.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import type { OwnerRef } from './pod-facts.js';
import type { ReplicaSetOwner, WorkloadKind, WorkloadRef } from './restart-plan.js';
import type { WorkloadObject } from './workload-decision.js';

const PLURAL: Readonly<Record<WorkloadKind, string>> = {
  Deployment: 'deployments',
  StatefulSet: 'statefulsets',
  DaemonSet: 'daemonsets',
};

const enc = encodeURIComponent;

/** The API path of a workload. */
export function workloadPath(w: WorkloadRef): string {
  return `/apis/apps/v1/namespaces/${enc(w.namespace)}/${PLURAL[w.kind]}/${enc(w.name)}`;
}

/** How an eviction ended. */
export type EvictionResult = 'evicted' | 'blocked' | 'gone';

/** The calls; an interface so the loop can be driven by a fake in unit tests. */
export interface RestartCalls {
  /** The Deployment owning a ReplicaSet, `null` for none, undefined when the ReplicaSet is gone. */
  replicaSetOwner(namespace: string, rs: OwnerRef): Promise<ReplicaSetOwner | undefined>;
  /** The workload, or undefined when it is gone. */
  readWorkload(w: WorkloadRef): Promise<WorkloadObject | undefined>;
  /**
   * Sets the Pod template's hash annotation (idempotent: the same hash changes nothing); another
   * `annotation` for the escaped-Pod repair (../escaped-pods/escaped-repair.ts).
   */
  annotateTemplate(w: WorkloadRef, hash: string, annotation?: string): Promise<void>;
  /** Evicts a Pod; `blocked` when a PodDisruptionBudget refuses it now (429). */
  evict(namespace: string, name: string): Promise<EvictionResult>;
  /** Adds our mount label to a Pod an upstream install stamped (a Pod gone meanwhile is fine). */
  labelPod(namespace: string, name: string): Promise<void>;
}

/** The real calls against `access`, each bounded by `timeoutMs`. */
export function restartCalls(access: ClusterAccess, timeoutMs = 10_000): RestartCalls {
  const get = async <T>(path: string): Promise<T | undefined> => {
    try {
      return await kubeRequest<T>(access, { method: 'GET', path, timeoutMs });
    } catch (err) {
      if (statusCodeOf(err) === 404) return undefined;
      throw err;
    }
  };
  return {
    async replicaSetOwner(namespace, rs) {
      const found = await get<{
        metadata?: { ownerReferences?: (OwnerRef & { controller?: boolean })[] };
      }>(`/apis/apps/v1/namespaces/${enc(namespace)}/replicasets/${enc(rs.name)}`);
      if (found === undefined) return undefined;
      const owner = found.metadata?.ownerReferences?.find((r) => r.controller === true);
      return owner?.kind === 'Deployment' && owner.apiVersion === 'apps/v1'
        ? { deployment: owner.name }
        : null;
    },
    readWorkload: (w) => get<WorkloadObject>(workloadPath(w)),
    async annotateTemplate(w, hash, annotation = CTB_HASH_ANNOTATION) {
      await kubeRequest(access, {
        method: 'PATCH',
        path: workloadPath(w),
        // Force: the annotation is ours alone; a stale value someone copied must not block a restart.
        query: { fieldManager: RESTARTER_FIELD_MANAGER, force: true },
        contentType: 'application/apply-patch+yaml',
        body: {
          apiVersion: 'apps/v1',
          kind: w.kind,
          metadata: { name: w.name, namespace: w.namespace },
          spec: { template: { metadata: { annotations: { [annotation]: hash } } } },
        },
        parseResponse: false,
        timeoutMs,
      });
    },
    async evict(namespace, name) {
      try {
        await kubeRequest(access, {
          method: 'POST',
          path: `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}/eviction`,
          body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } },
          parseResponse: false,
          timeoutMs,
        });
        return 'evicted';
      } catch (err) {
        const code = statusCodeOf(err);
        if (code === 429) return 'blocked';
        if (code === 404) return 'gone';
        throw err;
      }
    },
    async labelPod(namespace, name) {
      try {
        await kubeRequest(access, {
          method: 'PATCH',
          path: `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}`,
          query: { fieldManager: RESTARTER_FIELD_MANAGER },
          // A merge patch of the labels alone: nothing else of the Pod is touched.
          body: { metadata: { labels: { [CTB_MOUNTED_LABEL]: CTB_MOUNTED_VALUE } } },
          parseResponse: false,
          timeoutMs,
        });
      } catch (err) {
        if (statusCodeOf(err) !== 404) throw err;
      }
    },
  };
}

/** `calls`, each counted by `count(call)` before it is made (the requests metric). */
export function countedCalls(calls: RestartCalls, count: (call: keyof RestartCalls) => void): RestartCalls {
  return {
    replicaSetOwner(namespace, rs) {
      count('replicaSetOwner');
      return calls.replicaSetOwner(namespace, rs);
    },
    readWorkload(w) {
      count('readWorkload');
      return calls.readWorkload(w);
    },
    annotateTemplate(w, hash, annotation) {
      count('annotateTemplate');
      return calls.annotateTemplate(w, hash, annotation);
    },
    evict(namespace, name) {
      count('evict');
      return calls.evict(namespace, name);
    },
    labelPod(namespace, name) {
      count('labelPod');
      return calls.labelPod(namespace, name);
    },
  };
}
