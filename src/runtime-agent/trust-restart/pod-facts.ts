/**
 * What the restarter keeps of a Pod: a few fields, so its cache of every stamped Pod of the
 * cluster stays small (a full Pod is several KiB, this is a few hundred bytes). The cache holds
 * {@link SlimPod}s (the reflector's transform) and the planner reads {@link PodFacts}.
 */
import { CTB_HASH_ANNOTATION, RESTART_OPT_OUT_ANNOTATION } from '../../api/trust-stamp.js';

/** A Pod's controlling owner reference. */
export interface OwnerRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

/** A Pod as the restarter's cache holds it: the fields of the Kubernetes shape it reads. */
export interface SlimPod {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
    ownerReferences?: (OwnerRef & { controller?: boolean })[];
  };
  status?: { phase?: string };
}

/** The annotations the restarter reads; everything else is dropped. */
const KEPT_ANNOTATIONS = [CTB_HASH_ANNOTATION, RESTART_OPT_OUT_ANNOTATION];

/**
 * A kept annotation's value longer than this (a hash is 64 characters) is kept as
 * {@link OVERSIZED}: the Pod's creator writes them, and 250 KB each on thousands of Pods would be
 * the cache. It reads as it did (a hash that is not the bundle's, not an opt-out).
 */
const MAX_KEPT_VALUE = 128;
const OVERSIZED = '(oversized)';

/** Keeps only what {@link podFactsOf} reads (the reflector's transform; pure). */
export function slimPod(pod: SlimPod): SlimPod {
  const m = pod.metadata ?? {};
  const annotations: Record<string, string> = {};
  for (const key of KEPT_ANNOTATIONS) {
    const value = m.annotations?.[key];
    if (value !== undefined) annotations[key] = value.length > MAX_KEPT_VALUE ? OVERSIZED : value;
  }
  const controller = m.ownerReferences?.find((r) => r.controller === true);
  const slim: SlimPod = {
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      creationTimestamp: m.creationTimestamp,
      deletionTimestamp: m.deletionTimestamp,
      annotations: Object.keys(annotations).length > 0 ? annotations : undefined,
      ownerReferences: controller
        ? [
            {
              apiVersion: controller.apiVersion,
              kind: controller.kind,
              name: controller.name,
              uid: controller.uid,
              controller: true,
            },
          ]
        : undefined,
    },
  };
  const phase = pod.status?.phase;
  if (phase !== undefined) slim.status = { phase };
  return slim;
}

/** One Pod carrying the trust-bundle mount, as the planner reads it. */
export interface PodFacts {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** Epoch ms (second resolution, the API server's clock). */
  readonly createdAtMs: number;
  /** The stamp, if any. */
  readonly hash?: string;
  /** The Pod (its template) says `restart-on-trust-change: "false"`. */
  readonly optedOut: boolean;
  /** Terminating, Succeeded or Failed: nothing to restart. */
  readonly finished: boolean;
  /** The controlling owner, if any. */
  readonly owner?: OwnerRef;
}

/** The facts of a cached Pod (pure). */
export function podFactsOf(pod: SlimPod): PodFacts {
  const m = pod.metadata ?? {};
  const hash = m.annotations?.[CTB_HASH_ANNOTATION];
  const owner = m.ownerReferences?.find((r) => r.controller === true);
  const phase = pod.status?.phase;
  return {
    namespace: m.namespace ?? '',
    name: m.name ?? '',
    uid: m.uid ?? '',
    createdAtMs: m.creationTimestamp === undefined ? Number.NaN : new Date(m.creationTimestamp).getTime(),
    hash,
    optedOut: m.annotations?.[RESTART_OPT_OUT_ANNOTATION] === 'false',
    finished: m.deletionTimestamp !== undefined || phase === 'Succeeded' || phase === 'Failed',
    owner: owner
      ? { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid }
      : undefined,
  };
}
