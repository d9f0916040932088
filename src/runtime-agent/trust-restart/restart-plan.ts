/**
 * The restarter's pure core, first half: which Pods run an old bundle and what restarts them
 * (DESIGN.md §9). Given the bundle in force, the stamped Pods and what is known of their
 * ReplicaSets, it groups the stale Pods by the owner that can restart them: a workload whose Pod
 * template gets the new hash (Deployment, StatefulSet, DaemonSet), an eviction per Pod for any
 * other owner, nothing for a bare Pod (reported). No I/O, no clock.
 */
import type { OwnerRef, PodFacts } from './pod-facts.js';

/** The bundle in force. */
export interface BundleFacts {
  readonly hash: string;
  /** When its content last changed (epoch ms); NaN when unknown. */
  readonly changedAtMs: number;
  /**
   * How long after the change a new Pod may still get the old content (kubelet's cache, see
   * docs/trust-restart.md); 0 when new Pods see it at once.
   */
  readonly lagMs?: number;
}

/** How one Pod stands against the bundle in force. */
export type PodVerdict = 'current' | 'stale' | 'opted-out' | 'finished';

/**
 * A Pod is current when its stamp is the bundle's hash; a stamp that differs makes it stale; a
 * Pod without a stamp is current when it was created after the bundle's last content change and
 * stale otherwise (also when that time is unknown). Within `lagMs` after the change a new Pod may
 * still have been given the old content although stamped with the new hash: such a Pod, and an
 * unstamped one created then, is stale. A stale Pod that opted out stays as it is.
 */
export function podVerdict(pod: PodFacts, bundle: BundleFacts): PodVerdict {
  if (pod.finished) return 'finished';
  const visibleFrom = bundle.changedAtMs + (bundle.lagMs ?? 0);
  const inWindow = pod.createdAtMs > bundle.changedAtMs && pod.createdAtMs <= visibleFrom;
  const current =
    pod.hash !== undefined ? pod.hash === bundle.hash && !inWindow : pod.createdAtMs > visibleFrom;
  if (current) return 'current';
  return pod.optedOut ? 'opted-out' : 'stale';
}

/** The rollable kinds: restarted by one annotation on their Pod template. */
export type WorkloadKind = 'Deployment' | 'StatefulSet' | 'DaemonSet';

/** A workload by name. */
export interface WorkloadRef {
  readonly kind: WorkloadKind;
  readonly namespace: string;
  readonly name: string;
}

/** What a ReplicaSet belongs to: a Deployment by name, or nothing (`null`: it is its own owner). */
export type ReplicaSetOwner = { readonly deployment: string } | null;

/** Something to restart: a workload (by its template) or one Pod (by eviction). */
export type RestartTarget =
  | {
      readonly kind: 'workload';
      readonly key: string;
      readonly workload: WorkloadRef;
      readonly pods: readonly PodFacts[];
    }
  | { readonly kind: 'evict'; readonly key: string; readonly pod: PodFacts };

/** What {@link planRestarts} found. */
export interface RestartPlan {
  /** Stale Pods (bare ones included, opted-out ones not), by namespace. */
  readonly staleByNamespace: ReadonlyMap<string, number>;
  /** Stale Pods in all (the sum of {@link staleByNamespace}; what the KCP is told). */
  readonly stalePods: number;
  /** In a stable order: namespace, then kind, then name. */
  readonly targets: readonly RestartTarget[];
  /** Stale Pods without an owner: never touched, reported. */
  readonly bare: readonly PodFacts[];
  /**
   * Pods on an older bundle that opted out of restarts (they reload the file themselves), by
   * their own annotation (their template's) or their owner's; not stale.
   */
  readonly optedOut: readonly PodFacts[];
  /** Stale Pods of ReplicaSets not resolved yet (see {@link replicaSetsToResolve}). */
  readonly unresolved: readonly PodFacts[];
  /**
   * Stale Pods in namespaces the restarter holds no restart rights in (`rtb webhook
   * --restart-namespaces`): counted stale, never restarted, their owners never read.
   */
  readonly withoutRights: readonly PodFacts[];
}

/** Whether the restarter may restart in a namespace (by default everywhere). */
export type RestartScope = (namespace: string) => boolean;

/** Everywhere: the cluster-wide restart rights (the default). */
export const EVERYWHERE: RestartScope = () => true;

const APPS = 'apps/v1';
const ROLLABLE = new Set<string>(['StatefulSet', 'DaemonSet']);

/** `<namespace>/<uid>` of a Pod's ReplicaSet, the key of {@link planRestarts}'s map. */
export const replicaSetKey = (namespace: string, owner: OwnerRef): string => `${namespace}/${owner.uid}`;

/** The key of a workload target. */
export const workloadKey = (w: WorkloadRef): string => `${w.kind}/${w.namespace}/${w.name}`;

/** The key of an eviction target. */
export const evictionKey = (pod: PodFacts): string => `Pod/${pod.namespace}/${pod.name}`;

const isReplicaSet = (o: OwnerRef): boolean => o.kind === 'ReplicaSet' && o.apiVersion === APPS;

/**
 * The ReplicaSets of stale Pods that `known` does not resolve yet: the caller reads them (their
 * owner reference names the Deployment) before planning. Each once.
 */
export function replicaSetsToResolve(
  pods: readonly PodFacts[],
  bundle: BundleFacts,
  known: ReadonlyMap<string, ReplicaSetOwner>,
  mayRestart: RestartScope = EVERYWHERE,
): { readonly namespace: string; readonly owner: OwnerRef }[] {
  const wanted = new Map<string, { namespace: string; owner: OwnerRef }>();
  for (const pod of pods) {
    if (pod.owner === undefined || !isReplicaSet(pod.owner)) continue;
    // No rights there: its ReplicaSet is not even read.
    if (!mayRestart(pod.namespace)) continue;
    if (podVerdict(pod, bundle) !== 'stale') continue;
    const key = replicaSetKey(pod.namespace, pod.owner);
    if (!known.has(key)) wanted.set(key, { namespace: pod.namespace, owner: pod.owner });
  }
  return [...wanted.values()];
}

/** The workload that restarts `pod`, `undefined` for an eviction, or `'unresolved'`. */
function workloadOf(
  pod: PodFacts,
  owner: OwnerRef,
  replicaSets: ReadonlyMap<string, ReplicaSetOwner>,
): WorkloadRef | undefined | 'unresolved' {
  if (owner.apiVersion === APPS && ROLLABLE.has(owner.kind))
    return { kind: owner.kind as WorkloadKind, namespace: pod.namespace, name: owner.name };
  if (!isReplicaSet(owner)) return undefined;
  const rs = replicaSets.get(replicaSetKey(pod.namespace, owner));
  if (rs === undefined) return 'unresolved';
  return rs === null ? undefined : { kind: 'Deployment', namespace: pod.namespace, name: rs.deployment };
}

/**
 * The key of what restarts `pod` (a workload's, or its own eviction's), as {@link planRestarts}
 * groups it; undefined for a bare Pod or one of a ReplicaSet not resolved yet.
 */
export function restartKeyOf(
  pod: PodFacts,
  replicaSets: ReadonlyMap<string, ReplicaSetOwner>,
): string | undefined {
  if (pod.owner === undefined) return undefined;
  const workload = workloadOf(pod, pod.owner, replicaSets);
  if (workload === 'unresolved') return undefined;
  return workload === undefined ? evictionKey(pod) : workloadKey(workload);
}

// Kubernetes names are ASCII: code-unit order is their order, and far cheaper than a collation.
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const byName = (a: PodFacts, b: PodFacts): number => cmp(a.namespace, b.namespace) || cmp(a.name, b.name);

/**
 * Groups the stale Pods by what restarts them; see the file comment. `optedOutOwners` holds the
 * keys ({@link workloadKey}) of workloads found opted out on their own metadata: their Pods count
 * as opted out, not stale. Stale Pods outside `mayRestart` are only counted.
 */
export function planRestarts(
  bundle: BundleFacts,
  pods: readonly PodFacts[],
  replicaSets: ReadonlyMap<string, ReplicaSetOwner>,
  optedOutOwners: ReadonlySet<string> = new Set(),
  mayRestart: RestartScope = EVERYWHERE,
): RestartPlan {
  const staleByNamespace = new Map<string, number>();
  const workloads = new Map<string, { workload: WorkloadRef; pods: PodFacts[] }>();
  const evictions: PodFacts[] = [];
  const bare: PodFacts[] = [];
  const optedOut: PodFacts[] = [];
  const unresolved: PodFacts[] = [];
  const withoutRights: PodFacts[] = [];
  let stalePods = 0;
  const stale = (pod: PodFacts): void => {
    stalePods++;
    staleByNamespace.set(pod.namespace, (staleByNamespace.get(pod.namespace) ?? 0) + 1);
  };
  for (const pod of pods) {
    const verdict = podVerdict(pod, bundle);
    if (verdict === 'current' || verdict === 'finished') continue;
    if (verdict === 'opted-out') {
      optedOut.push(pod);
      continue;
    }
    if (!mayRestart(pod.namespace)) {
      stale(pod);
      withoutRights.push(pod);
      continue;
    }
    if (pod.owner === undefined) {
      stale(pod);
      bare.push(pod);
      continue;
    }
    const workload = workloadOf(pod, pod.owner, replicaSets);
    if (workload === 'unresolved') unresolved.push(pod);
    else if (workload === undefined) evictions.push(pod);
    else {
      const key = workloadKey(workload);
      if (optedOutOwners.has(key)) {
        optedOut.push(pod);
        continue;
      }
      const entry = workloads.get(key) ?? { workload, pods: [] };
      entry.pods.push(pod);
      workloads.set(key, entry);
    }
    stale(pod);
  }
  const targets: RestartTarget[] = [
    ...[...workloads.entries()].map(([key, w]) => ({
      kind: 'workload' as const,
      key,
      workload: w.workload,
      pods: w.pods.sort(byName),
    })),
    ...evictions.map((pod) => ({ kind: 'evict' as const, key: evictionKey(pod), pod })),
  ];
  targets.sort((a, b) => cmp(targetOrder(a), targetOrder(b)));
  return {
    staleByNamespace,
    stalePods,
    targets,
    bare: bare.sort(byName),
    optedOut: optedOut.sort(byName),
    unresolved: unresolved.sort(byName),
    withoutRights: withoutRights.sort(byName),
  };
}

// Namespace first, so one namespace's owners restart together, one after another.
function targetOrder(t: RestartTarget): string {
  return t.kind === 'workload'
    ? `${t.workload.namespace}\0${t.workload.kind}\0${t.workload.name}`
    : `${t.pod.namespace}\0Pod\0${t.pod.name}`;
}
