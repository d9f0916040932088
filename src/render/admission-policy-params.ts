/**
 * The admission policy's parameters (docs/admission-policy.md): the webhook config compiled into
 * flat ConfigMap data the policy's CEL reads. The policy text is the same for every config; what
 * a set changes is this data, so policy and parameters of one set are committed together.
 */
import type { WebhookConfig } from '../api/webhook-config.js';
import { expandFeatureKeys, FEATURES } from '../api/webhook-features.js';
import { isLabelValue } from '../mutation/stamp-revision.js';
import { usableOverrides } from '../image/registry-rewrite.js';
import { canonicalRegistry } from '../image/image-reference.js';
import { parseOverrideExclusion } from '../image/override-exclusions.js';
import { normalizeMountPath } from '../mutation/add-cluster-trust-bundle.js';

/**
 * The most overrides a policy carries: the CEL scans them once per image, so their number bounds
 * the cost of every admission (a config with more is refused; the webhook alone serves it).
 */
export const MAX_POLICY_OVERRIDES = 64;

/** The longest revision or landscape a policy carries (a set version of ours is far shorter). */
export const MAX_POLICY_VALUE_CHARS = 253;

/** The ConfigMap data keys the policy reads (docs/admission-policy.md lists them). */
export const PARAM_KEYS = {
  available: 'available',
  namespacePrefix: 'namespace.',
  overrides: 'overrides',
  overrideExclusions: 'overrideExclusions',
  pullSecret: 'pullSecret',
  landscape: 'landscape',
  revision: 'revision',
  revisionLabel: 'revisionLabel',
  trustBundleName: 'trustBundleName',
  trustBundlePath: 'trustBundlePath',
  trustBundleVolume: 'trustBundleVolume',
  trustBundleMountPath: 'trustBundleMountPath',
  trustBundleMountPattern: 'trustBundleMountPattern',
  trustBundleHash: 'trustBundleHash',
} as const;

/** What a set adds to its config for the policy. */
export interface AdmissionPolicyParamOptions {
  /** The set version stamped on every Pod the policy changes (DESIGN §11); none when undefined. */
  readonly revision?: string | undefined;
  /** The ClusterTrustBundle's name instead of the config's `clusterTrustBundle.name`. */
  readonly trustBundleName?: string | undefined;
  /** SHA-256 hex of the bundle (../api/trust-stamp.ts), stamped as the webhook stamps it. */
  readonly trustBundleHash?: string | undefined;
  /**
   * false where the runtime cannot take the trust-bundle mount (../api/trust-bundle-capability.ts):
   * the feature then adds nothing, as the webhook does there. Default true.
   */
  readonly trustBundleMount?: boolean | undefined;
}

/** An option or config field the policy cannot carry; `field` names it. */
export class AdmissionPolicyConfigError extends Error {
  override readonly name = 'AdmissionPolicyConfigError';

  constructor(
    readonly field: string,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(`${field}: ${reason}`, options);
  }
}

// A namespace name (DNS-1123 label): only such keys of namespaceFeatures can match a Pod.
const NAMESPACE_NAME = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
// SHA-256 hex, as ../api/trust-stamp.ts computes it.
const SHA256_HEX = /^[a-f0-9]{64}$/;

/** `path` as an RE2 pattern matching every spelling the webhook reads as it (`//`, a trailing `/`). */
export function mountPathPattern(path: string): string {
  const normalized = normalizeMountPath(path);
  if (normalized === '/') return '^/+$';
  const quoted = normalized.split('/').map((part) => part.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&'));
  return `^${quoted.join('/+')}/*$`;
}

function checkValue(field: string, value: string): string {
  if (value === '' || value.length > MAX_POLICY_VALUE_CHARS || /[\n\r]/.test(value))
    throw new AdmissionPolicyConfigError(
      field,
      `must be 1-${MAX_POLICY_VALUE_CHARS} characters on one line, got ${JSON.stringify(value.slice(0, 80))}`,
    );
  return value;
}

/**
 * The ConfigMap data of the policy's parameters for `config` (read as `rtb webhook` reads it).
 *
 * @throws AdmissionPolicyConfigError naming the field the policy cannot carry.
 */
export function admissionPolicyParamData(
  config: WebhookConfig,
  options: AdmissionPolicyParamOptions = {},
): Record<string, string> {
  const available = expandFeatureKeys(config.availableFeatures);
  const data: Record<string, string> = {
    [PARAM_KEYS.available]: FEATURES.filter((f) => available.has(f)).join(' '),
    [PARAM_KEYS.pullSecret]: config.imagePullSecret.name,
  };
  for (const [namespace, keys] of Object.entries(config.namespaceFeatures)) {
    if (!NAMESPACE_NAME.test(namespace)) continue;
    const features = expandFeatureKeys(keys);
    const on = FEATURES.filter((f) => available.has(f) && features.has(f));
    if (on.length > 0) data[`${PARAM_KEYS.namespacePrefix}${namespace}`] = on.join(' ');
  }
  const overrides = usableOverrides(config.overrides);
  if (overrides.size > MAX_POLICY_OVERRIDES)
    throw new AdmissionPolicyConfigError(
      'overrides',
      `${overrides.size} usable overrides, more than the ${MAX_POLICY_OVERRIDES} a policy carries`,
    );
  // Which hosts a runtime caches is known on the runtime alone, and may change between two sets:
  // the policy cannot leave them, so Pods are left to the webhook, which reads them
  // (docs/registry-caches.md).
  if (config.registryCaches === 'leave' && overrides.size > 0)
    throw new AdmissionPolicyConfigError(
      'registryCaches',
      "leave: which hosts have a customer's registry cache is known on each runtime alone; the webhook alone admits",
    );
  // One line per override: source, target host, the host as a registry, path prefix ('' for none).
  data[PARAM_KEYS.overrides] = [...overrides]
    .map(([source, t]) => `${source} ${t.host} ${canonicalRegistry(t.host)} ${t.pathPrefix}`)
    .join('\n');
  // One line per exclusion, as runtimes read it: registry, repository or path, then its kind
  // (`repository`, `below`, or `image` with its tag and digest, '' for one not named). Absent when
  // there is none.
  const exclusions = (config.overrideExclusions ?? []).map((entry) => {
    const e = parseOverrideExclusion(entry);
    if (e.kind === 'below') return `${e.registry} ${e.path} below`;
    return e.kind === 'repository'
      ? `${e.registry} ${e.repository} repository`
      : `${e.registry} ${e.repository} image ${e.tag ?? ''} ${e.digest ?? ''}`;
  });
  if (exclusions.length > 0) data[PARAM_KEYS.overrideExclusions] = exclusions.join('\n');
  if (config.landscape !== undefined) data[PARAM_KEYS.landscape] = checkValue('landscape', config.landscape);
  if (options.revision !== undefined) {
    data[PARAM_KEYS.revision] = checkValue('revision', options.revision);
    if (isLabelValue(options.revision)) data[PARAM_KEYS.revisionLabel] = options.revision;
  }
  const bundle = config.clusterTrustBundle;
  if (options.trustBundleName !== undefined && bundle === undefined)
    throw new AdmissionPolicyConfigError(
      'clusterTrustBundle',
      'absent or unusable, so there is no trust bundle to name',
    );
  if (options.trustBundleHash !== undefined && !SHA256_HEX.test(options.trustBundleHash))
    throw new AdmissionPolicyConfigError('trustBundleHash', 'must be 64 lowercase hex digits');
  if (bundle !== undefined && options.trustBundleMount !== false) {
    data[PARAM_KEYS.trustBundleName] = checkValue(
      'clusterTrustBundle.name',
      options.trustBundleName ?? bundle.name,
    );
    data[PARAM_KEYS.trustBundlePath] = bundle.certWritePath;
    data[PARAM_KEYS.trustBundleVolume] = bundle.volumeName;
    data[PARAM_KEYS.trustBundleMountPath] = bundle.volumeMountPath;
    data[PARAM_KEYS.trustBundleMountPattern] = mountPathPattern(bundle.volumeMountPath);
    if (options.trustBundleHash !== undefined) data[PARAM_KEYS.trustBundleHash] = options.trustBundleHash;
  }
  return data;
}
