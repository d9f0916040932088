/**
 * Feature `rt-cfg.kyma-project.io/add-cluster-trust-bundle`: a projected volume with the
 * ClusterTrustBundle, mounted read-only in every container and init container.
 */
import type { ClusterTrustBundleConfig } from '../api/trust-bundle-config.js';
import {
  containerLabel,
  containersOf,
  REGULAR_CONTAINER_KINDS,
  type ContainerKind,
  type ManipulationResult,
  type PodPatchBuilder,
} from './manipulation.js';
import type { Volume, VolumeMount } from './pod.js';

/** The projected volume's file mode (0644), as the API server would default it. */
export const CTB_DEFAULT_MODE = 420;

/** Options of addClusterTrustBundle. */
export interface AddClusterTrustBundleOptions {
  /** The container lists to visit; containers and init containers by default. */
  readonly containerKinds?: readonly ContainerKind[] | undefined;
}

/** The volume the webhook adds, exactly as it appears in a mutated Pod. */
export function clusterTrustBundleVolume(config: ClusterTrustBundleConfig): Volume {
  return {
    name: config.volumeName,
    projected: {
      defaultMode: CTB_DEFAULT_MODE,
      sources: [{ clusterTrustBundle: { name: config.name, path: config.certWritePath } }],
    },
  };
}

/** The mount the webhook adds to each container. */
export function clusterTrustBundleMount(config: ClusterTrustBundleConfig): VolumeMount {
  return { mountPath: config.volumeMountPath, name: config.volumeName, readOnly: true };
}

/**
 * Structural equality of JSON data (the workload follower also uses it to tell our volume from a
 * look-alike). node:util's isDeepStrictEqual costs microseconds per call and compares prototypes,
 * neither of which we want on the admission path.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]))
    );
  }
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every(
    (k) =>
      Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}

/** A mount path as the runtime reads it: `/etc/ssl/certs/` and `/etc/ssl//certs` are `/etc/ssl/certs`. */
export function normalizeMountPath(path: string): string {
  const collapsed = path.replace(/\/{2,}/g, '/');
  return collapsed.length > 1 ? collapsed.replace(/\/$/, '') : collapsed;
}

/**
 * Adds the volume and mounts it at `volumeMountPath` in each container.
 *
 * Decisions:
 * - A volume of the configured name that is exactly ours (say, the Pod came from a mutated Pod's
 *   manifest) is reused. Any other volume of that name is not ours: then nothing is added at all,
 *   neither a second volume (invalid) nor mounts (they would expose someone else's data at the
 *   trust-store path), and a warning says why.
 * - A container that already mounts something at that path is skipped with a warning (a second
 *   mount at one path is invalid); one that already mounts our volume there is left as it is.
 * - The volume is only added when at least one container mounts it; an unused volume is noise.
 */
export function addClusterTrustBundle(
  builder: PodPatchBuilder,
  config: ClusterTrustBundleConfig,
  options: AddClusterTrustBundleOptions = {},
): ManipulationResult {
  const warnings: string[] = [];
  const volume = clusterTrustBundleVolume(config);
  const volumesValue: unknown = builder.current.spec?.volumes;
  const volumes = Array.isArray(volumesValue) ? (volumesValue as Volume[]) : [];
  const existing = volumes.find((v) => v.name === config.volumeName);
  if (existing !== undefined && !jsonEqual(existing, volume)) {
    warnings.push(
      `volume ${JSON.stringify(config.volumeName)} exists and is not the trust-bundle volume; trust bundle not mounted`,
    );
    return { changed: false, warnings };
  }

  const wantedPath = normalizeMountPath(config.volumeMountPath);
  const targets: [ContainerKind, number][] = [];
  for (const kind of options.containerKinds ?? REGULAR_CONTAINER_KINDS) {
    containersOf(builder.current, kind).forEach((container, index) => {
      const mountsValue: unknown = container.volumeMounts;
      const mounts = Array.isArray(mountsValue) ? (mountsValue as VolumeMount[]) : [];
      const atPath = mounts.find(
        (m) => typeof m.mountPath === 'string' && normalizeMountPath(m.mountPath) === wantedPath,
      );
      if (atPath === undefined) {
        targets.push([kind, index]);
      } else if (atPath.name !== config.volumeName) {
        warnings.push(
          `${containerLabel(kind, index, container)} already mounts ${JSON.stringify(atPath.name)} at ` +
            `${config.volumeMountPath}; trust bundle not mounted there`,
        );
      }
    });
  }
  if (targets.length === 0) return { changed: false, warnings };

  if (existing === undefined) builder.append(['spec', 'volumes'], volume);
  const mount = clusterTrustBundleMount(config);
  for (const [kind, index] of targets) builder.append(['spec', kind, index, 'volumeMounts'], mount);
  return { changed: true, warnings };
}
