/**
 * What the webhook's namespace cache keeps of a Namespace: the namespace cache is listed and
 * watched metadata-only, and whoever may annotate a Namespace may give it up to 256 KiB of
 * annotations, so only what admission and the pull-Secret copier read stays: the name, whether it
 * is being deleted, and the feature annotations (DESIGN §3).
 */
import type { V1Namespace } from '@kubernetes/client-node';
import { isFeatureKey } from '../api/webhook-features.js';

/** The cached form of `ns` (the namespace reflector's transform; pure). */
export function cachedNamespaceOf(ns: V1Namespace): V1Namespace {
  const m = ns.metadata ?? {};
  let annotations: Record<string, string> | undefined;
  for (const [key, value] of Object.entries(m.annotations ?? {}))
    if (isFeatureKey(key)) (annotations ??= {})[key] = value;
  const phase = ns.status?.phase;
  return {
    metadata: {
      name: m.name,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      deletionTimestamp: m.deletionTimestamp,
      annotations,
    },
    status: phase === undefined ? undefined : { phase },
  };
}
