/**
 * The trust-bundle stamp (DESIGN.md §9): a Pod that carries the trust-bundle mount gets the hash
 * of the bundle the webhook knows (annotation, upstream's name and value) and our label (so the
 * restarter lists exactly such Pods server-side). Runs after add-cluster-trust-bundle.
 */
import type { ClusterTrustBundleConfig } from '../api/trust-bundle-config.js';
import { CTB_HASH_ANNOTATION, CTB_MOUNTED_LABEL, CTB_MOUNTED_VALUE } from '../api/trust-stamp.js';
import {
  containersOf,
  REGULAR_CONTAINER_KINDS,
  type ManipulationResult,
  type PodPatchBuilder,
} from './manipulation.js';
import type { Volume, VolumeMount } from './pod.js';
import { asJsonObject } from '../api/json-object.js';

function carriesMount(builder: PodPatchBuilder, config: ClusterTrustBundleConfig): boolean {
  const volumesValue: unknown = builder.current.spec?.volumes;
  const volumes = Array.isArray(volumesValue) ? (volumesValue as Volume[]) : [];
  const ours = volumes.some(
    (v) =>
      v.name === config.volumeName &&
      (v.projected?.sources ?? []).some((s) => s.clusterTrustBundle?.name === config.name),
  );
  if (!ours) return false;
  return REGULAR_CONTAINER_KINDS.some((kind) =>
    containersOf(builder.current, kind).some((c) => {
      const mounts: unknown = c.volumeMounts;
      return Array.isArray(mounts) && (mounts as VolumeMount[]).some((m) => m.name === config.volumeName);
    }),
  );
}

/**
 * Stamps a Pod that carries our mount (added now, or already there): label
 * {@link CTB_MOUNTED_LABEL}, and {@link CTB_HASH_ANNOTATION} = `bundleHash`. With no hash known
 * (the bundle not read yet, or missing) a stamp the Pod brought along (from a Pod template the
 * restarter annotated) is removed: the Pod is then judged by its creation time, never by a stamp
 * that may name another bundle. A Pod without the mount is left alone.
 */
export function stampTrustBundle(
  builder: PodPatchBuilder,
  config: ClusterTrustBundleConfig,
  bundleHash: string | undefined,
): ManipulationResult {
  if (!carriesMount(builder, config)) return { changed: false, warnings: [] };
  const before = builder.operations.length;
  const labels = asJsonObject(builder.current.metadata?.labels);
  if (labels?.[CTB_MOUNTED_LABEL] !== CTB_MOUNTED_VALUE)
    builder.set(['metadata', 'labels', CTB_MOUNTED_LABEL], CTB_MOUNTED_VALUE);
  const annotations = asJsonObject(builder.current.metadata?.annotations);
  const stamp = annotations?.[CTB_HASH_ANNOTATION];
  if (bundleHash !== undefined && stamp !== bundleHash)
    builder.set(['metadata', 'annotations', CTB_HASH_ANNOTATION], bundleHash);
  else if (bundleHash === undefined && stamp !== undefined)
    builder.remove(['metadata', 'annotations', CTB_HASH_ANNOTATION]);
  return { changed: builder.operations.length > before, warnings: [] };
}
