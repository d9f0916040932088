/**
 * The config's `clusterTrustBundle` block: which ClusterTrustBundle to project into Pods, and where.
 *
 * Upstream (its `k8s.ClusterTrustBundle`) requires `name`, `certWritePath`, `volumeMountPath` and
 * `volumeName` to be non-empty strings and accepts any such strings. We refuse what it refuses,
 * except that `volumeName` and `volumeMountPath` may be left out (defaults below). A block upstream
 * accepts but whose values no Pod could carry (a volume name that is not a DNS label, an absolute
 * `certWritePath`, …) would make the API server refuse every Pod that gets it; such a block is
 * dropped with a warning per field, so nothing is mounted and every other feature still works.
 */
import { z } from 'zod';
import { readGoDuration } from './go-duration.js';

/** Default of `clusterTrustBundle.volumeName`. */
export const DEFAULT_CTB_VOLUME_NAME = 'rt-bootstrapper-certs';
/** Default of `clusterTrustBundle.volumeMountPath`. */
export const DEFAULT_CTB_MOUNT_PATH = '/etc/ssl/certs';

/** The trust-bundle settings in force, defaults filled in. */
export interface ClusterTrustBundleConfig {
  readonly name: string;
  readonly certWritePath: string;
  readonly volumeName: string;
  readonly volumeMountPath: string;
  /**
   * Upstream's `resyncInterval` (a Go duration string, or nanoseconds) in milliseconds, when
   * given and positive. Kept for whoever paces trust-bundle work; the mutation does not use it.
   */
  readonly resyncIntervalMs?: number;
}

/** A finding about one field of the block, relative to `clusterTrustBundle`. */
export interface TrustBundleFinding {
  readonly field: string;
  readonly message: string;
}

const DNS1123_LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
// ClusterTrustBundle names are subdomains, or `<signer with / as :>:<suffix>` for signer-linked
// bundles (e.g. `rt-bootstrapper-k3d.test:ctb:1`), so ":" is allowed in addition.
const CTB_NAME = /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9.:]*[a-z0-9])?$/;

// Upstream's `validate:"required"` on a string: present and not empty.
const requiredText = z.string().min(1, { error: 'required' });

/** The block as decoded: the types upstream's decoder enforces, nothing more. */
export const trustBundleBlockSchema = z.object({
  name: requiredText,
  certWritePath: requiredText,
  volumeName: requiredText.optional(),
  volumeMountPath: requiredText.optional(),
  resyncInterval: z.union([z.string(), z.number()]).nullish(),
});

/** The decoded block. */
export type TrustBundleBlock = z.output<typeof trustBundleBlockSchema>;

/** The field names upstream's decoder knows in the block (matched case-insensitively). */
export const TRUST_BUNDLE_FIELDS = Object.keys(trustBundleBlockSchema.shape);

function unusable(block: TrustBundleBlock, volumeName: string, mountPath: string): TrustBundleFinding[] {
  const found: TrustBundleFinding[] = [];
  if (!CTB_NAME.test(block.name))
    found.push({ field: 'name', message: 'not a valid ClusterTrustBundle name' });
  const path = block.certWritePath;
  if (path.startsWith('/') || path.split('/').includes('..')) {
    found.push({ field: 'certWritePath', message: 'must be a relative path without ".."' });
  }
  if (!DNS1123_LABEL.test(volumeName)) {
    found.push({ field: 'volumeName', message: 'not a valid volume name (a DNS-1123 label)' });
  }
  if (!mountPath.startsWith('/') || mountPath.split('/').includes('..')) {
    found.push({ field: 'volumeMountPath', message: 'must be an absolute path without ".."' });
  }
  return found;
}

function resyncMs(value: string | number, warnings: TrustBundleFinding[]): number | undefined {
  let nanos: bigint;
  try {
    nanos = readGoDuration(value);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    warnings.push({ field: 'resyncInterval', message: `${reason}; ignored` });
    return undefined;
  }
  if (nanos <= 0n) {
    warnings.push({ field: 'resyncInterval', message: 'not a positive duration; ignored' });
    return undefined;
  }
  return Number(nanos) / 1e6;
}

/**
 * Turns a decoded block into the settings in force, or undefined when a value could not work in a
 * Pod (then every such value is a warning, and the trust bundle is not mounted).
 */
export function resolveTrustBundle(block: TrustBundleBlock): {
  readonly config: ClusterTrustBundleConfig | undefined;
  readonly warnings: readonly TrustBundleFinding[];
} {
  const volumeName = block.volumeName ?? DEFAULT_CTB_VOLUME_NAME;
  const volumeMountPath = block.volumeMountPath ?? DEFAULT_CTB_MOUNT_PATH;
  const problems = unusable(block, volumeName, volumeMountPath);
  if (problems.length > 0) {
    return {
      config: undefined,
      warnings: problems.map((p) => ({ ...p, message: `${p.message}; the trust bundle is not mounted` })),
    };
  }
  const warnings: TrustBundleFinding[] = [];
  const ms =
    block.resyncInterval === undefined || block.resyncInterval === null
      ? undefined
      : resyncMs(block.resyncInterval, warnings);
  const config: ClusterTrustBundleConfig = {
    name: block.name,
    certWritePath: block.certWritePath,
    volumeName,
    volumeMountPath,
    resyncIntervalMs: ms,
  };
  return { config, warnings };
}
