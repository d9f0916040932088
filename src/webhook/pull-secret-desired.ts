import type { V1Secret } from '@kubernetes/client-node';
import { COPIED_FROM_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';

/** What the copier decided for one namespace. */
export type CopyDecision =
  | { readonly action: 'none'; readonly why: string }
  | { readonly action: 'create' | 'update'; readonly secret: V1Secret }
  | { readonly action: 'conflict'; readonly why: string };

/** Namespaces that never get a copy (system namespaces hold no workloads of ours). */
export const DEFAULT_EXCLUDED_NAMESPACES: readonly string[] = [
  'kube-system',
  'kube-public',
  'kube-node-lease',
];

/**
 * Decides, without I/O, what the copy of the pull Secret in `namespace` should become: a copy
 * equals the source in `type` and `data`, carries our label, and is never written over a
 * Secret of that name that somebody else owns.
 */
export function decidePullSecretCopy(input: {
  readonly source: V1Secret | undefined;
  readonly copy: V1Secret | undefined;
  readonly namespace: string;
  readonly namespaceActive: boolean;
}): CopyDecision {
  const { source, copy, namespace } = input;
  if (!source?.metadata?.name || !source.metadata.namespace) return { action: 'none', why: 'source missing' };
  if (namespace === source.metadata.namespace) return { action: 'none', why: 'source namespace' };
  if (!input.namespaceActive) return { action: 'none', why: 'namespace missing or terminating' };
  const from = `${source.metadata.namespace}/${source.metadata.name}`;
  const desired: V1Secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: source.metadata.name,
      namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
      annotations: { [COPIED_FROM_ANNOTATION]: from },
    },
    type: source.type,
    data: { ...(source.data ?? {}) },
  };
  if (!copy) return { action: 'create', secret: desired };
  if (copy.metadata?.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY_VALUE) {
    return {
      action: 'conflict',
      why: `a Secret ${source.metadata.name} not managed by rt-bootstrapper exists`,
    };
  }
  const same =
    (copy.type ?? 'Opaque') === (source.type ?? 'Opaque') &&
    sameData(copy.data, source.data) &&
    copy.metadata.annotations?.[COPIED_FROM_ANNOTATION] === from;
  if (same) return { action: 'none', why: 'up to date' };
  // `type` is immutable: a changed type needs delete+create, which update cannot do; the
  // writer handles that by recreating on a 422.
  return {
    action: 'update',
    secret: {
      ...desired,
      metadata: {
        ...desired.metadata,
        labels: { ...copy.metadata.labels, ...desired.metadata?.labels },
        annotations: { ...copy.metadata.annotations, ...desired.metadata?.annotations },
        resourceVersion: copy.metadata.resourceVersion,
      },
    },
  };
}

function sameData(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const ak = Object.keys(a ?? {});
  const bk = Object.keys(b ?? {});
  if (ak.length !== bk.length) return false;
  return ak.every((k) => a?.[k] === b?.[k]);
}
