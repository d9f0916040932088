/**
 * The webhook configuration: the JSON in ConfigMap `kyma-system/rt-bootstrapper-config`, key
 * `rt-bootstrapper-config.json`. Same shape as the upstream Go implementation, so existing
 * landscapes' ConfigMaps work unchanged, plus optional fields of ours (`failOpen`).
 *
 * Forward compatibility: unknown fields (top level and nested) are accepted and dropped, so a
 * ConfigMap written for a newer upstream version still loads. Known fields are strict: a malformed
 * value or an unknown feature key refuses the whole config, naming every offending path.
 */
import { z } from 'zod';
import { overrideSourceProblem, overrideTargetProblem } from '../image/registry-rewrite.js';

/** Opt-in/opt-out annotation and config key: rewrite image registries by `overrides`. */
export const FEATURE_ALTER_IMG_REGISTRY = 'rt-cfg.kyma-project.io/alter-img-registry';
/** Append the pull Secret to `.spec.imagePullSecrets`. */
export const FEATURE_ADD_IMG_PULL_SECRET = 'rt-cfg.kyma-project.io/add-img-pull-secret';
/** Set env `KYMA_FIPS_MODE_ENABLED=true` in every container and init container. */
export const FEATURE_SET_FIPS_MODE = 'rt-cfg.kyma-project.io/set-fips-mode';
/** Mount the ClusterTrustBundle as a projected volume in every container and init container. */
export const FEATURE_ADD_CLUSTER_TRUST_BUNDLE = 'rt-cfg.kyma-project.io/add-cluster-trust-bundle';
/** Alias for all four features. */
export const FEATURE_ALL = 'rt-cfg.kyma-project.io/all';

/** The four features, in the order the pipeline applies them. */
export const FEATURES = [
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_SET_FIPS_MODE,
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
] as const;
/** One concrete feature. */
export type Feature = (typeof FEATURES)[number];

/** Every key accepted in `availableFeatures`, `namespaceFeatures` and annotations. */
export const FEATURE_KEYS = [...FEATURES, FEATURE_ALL] as const;
/** A feature or the `all` alias. */
export type FeatureKey = (typeof FEATURE_KEYS)[number];

/** Annotation set to `"true"` on every Pod the webhook changed (the seed's name). */
export const ANNOTATION_DEFAULTED = 'rt-bootstrapper.kyma-project.io/defaulted';
/** The FIPS environment variable. */
export const ENV_FIPS_MODE = 'KYMA_FIPS_MODE_ENABLED';

/** Namespace of the config ConfigMap on a runtime. */
export const CONFIG_MAP_NAMESPACE = 'kyma-system';
/** Name of the config ConfigMap. */
export const CONFIG_MAP_NAME = 'rt-bootstrapper-config';
/** The ConfigMap data key holding the JSON. */
export const CONFIG_MAP_KEY = 'rt-bootstrapper-config.json';

/** Default of `clusterTrustBundle.volumeName`. */
export const DEFAULT_CTB_VOLUME_NAME = 'rt-bootstrapper-certs';
/** Default of `clusterTrustBundle.volumeMountPath`. */
export const DEFAULT_CTB_MOUNT_PATH = '/etc/ssl/certs';
/** Default of `imagePullSecret.name`. */
export const DEFAULT_PULL_SECRET_NAME = 'registry-credentials';
/** Default of `imagePullSecret.namespace` (where the source Secret lives). */
export const DEFAULT_PULL_SECRET_NAMESPACE = 'kyma-system';

const FEATURE_KEY_SET: ReadonlySet<string> = new Set(FEATURE_KEYS);

/** Whether `value` is one of the known feature keys (including `all`). */
export function isFeatureKey(value: unknown): value is FeatureKey {
  return typeof value === 'string' && FEATURE_KEY_SET.has(value);
}

/** Expands `all` and drops duplicates; the result follows FEATURES order. */
export function expandFeatureKeys(keys: Iterable<FeatureKey>): Set<Feature> {
  const wanted = new Set<FeatureKey>(keys);
  if (wanted.has(FEATURE_ALL)) return new Set(FEATURES);
  return new Set(FEATURES.filter((f) => wanted.has(f)));
}

// Kubernetes name rules (apimachinery validation): DNS-1123 label for namespaces and volume
// names, DNS-1123 subdomain for Secret names.
const DNS1123_LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS1123_SUBDOMAIN =
  /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;
// ClusterTrustBundle names are subdomains, or `<signer with / as :>:<suffix>` for signer-linked
// bundles (e.g. `rt-bootstrapper-k3d.test:ctb:1`), so ":" is allowed in addition.
const CTB_NAME = /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9.:]*[a-z0-9])?$/;

const dnsLabel = (what: string) =>
  z.string().regex(DNS1123_LABEL, { error: `invalid ${what}: must be a DNS-1123 label` });

const featureKey = z.enum(FEATURE_KEYS, {
  error: (issue) =>
    typeof issue.input === 'string'
      ? `unknown feature ${JSON.stringify(issue.input)}`
      : 'expected a feature key string',
});
const featureList = z.array(featureKey);

const overrides = z.record(
  z.string().superRefine((key, ctx) => {
    const problem = overrideSourceProblem(key);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `override key: ${problem}` });
  }),
  z.string().superRefine((target, ctx) => {
    const problem = overrideTargetProblem(target);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  }),
);

const relativeFilePath = z
  .string()
  .min(1, { error: 'must not be empty' })
  .refine((p) => !p.startsWith('/'), { error: 'must be a relative path' })
  .refine((p) => !p.split('/').includes('..'), { error: 'must not contain ".."' });

const absolutePath = z
  .string()
  .refine((p) => p.startsWith('/'), { error: 'must be an absolute path' })
  .refine((p) => !p.split('/').includes('..'), { error: 'must not contain ".."' });

const clusterTrustBundle = z.object({
  name: z.string().regex(CTB_NAME, { error: 'invalid ClusterTrustBundle name' }),
  certWritePath: relativeFilePath,
  volumeName: dnsLabel('volume name').default(DEFAULT_CTB_VOLUME_NAME),
  volumeMountPath: absolutePath.default(DEFAULT_CTB_MOUNT_PATH),
});

const imagePullSecret = z.object({
  name: z
    .string()
    .regex(DNS1123_SUBDOMAIN, { error: 'invalid Secret name: must be a DNS-1123 subdomain' })
    .default(DEFAULT_PULL_SECRET_NAME),
  namespace: dnsLabel('namespace').default(DEFAULT_PULL_SECRET_NAMESPACE),
});

/** The zod schema; prefer parseWebhookConfig, which also reports errors readably. */
export const webhookConfigSchema = z
  .object({
    overrides: overrides.default({}),
    clusterTrustBundle: clusterTrustBundle.optional(),
    availableFeatures: featureList,
    namespaceFeatures: z.record(dnsLabel('namespace name'), featureList).default({}),
    imagePullSecret: imagePullSecret.prefault({}),
    /** Ours: on an internal error answer "allowed" without a patch (true) or refuse the Pod. */
    failOpen: z.boolean().default(true),
  })
  .superRefine((config, ctx) => {
    const available = expandFeatureKeys(config.availableFeatures);
    if (available.has(FEATURE_ADD_CLUSTER_TRUST_BUNDLE) && config.clusterTrustBundle === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['clusterTrustBundle'],
        message: `required when "${FEATURE_ADD_CLUSTER_TRUST_BUNDLE}" is available`,
      });
    }
    // As upstream: a namespace default the catalog does not offer is a mistake, not a no-op.
    for (const [namespace, keys] of Object.entries(config.namespaceFeatures)) {
      keys.forEach((key, index) => {
        if (key !== FEATURE_ALL && !available.has(key)) {
          ctx.addIssue({
            code: 'custom',
            path: ['namespaceFeatures', namespace, index],
            message: `feature "${key}" is not in availableFeatures`,
          });
        }
      });
    }
  });

/** The config as accepted on input (optional fields may be omitted). */
export type WebhookConfigInput = z.input<typeof webhookConfigSchema>;
/** The config after parsing, with every default filled in. */
export type WebhookConfig = z.output<typeof webhookConfigSchema>;
/** The ClusterTrustBundle settings with defaults filled in. */
export type ClusterTrustBundleConfig = NonNullable<WebhookConfig['clusterTrustBundle']>;
/** The pull-Secret settings with defaults filled in. */
export type ImagePullSecretConfig = WebhookConfig['imagePullSecret'];

/** One reason a config was refused. */
export interface ConfigIssue {
  /** Where, e.g. `availableFeatures[2]`, `overrides["replace.me"]`, or `(root)`. */
  readonly path: string;
  readonly message: string;
}

/** A refused config; the message lists every issue as `path: message`, one per line. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[], options?: ErrorOptions) {
    super(`invalid webhook config:\n${issues.map((i) => `  ${i.path}: ${i.message}`).join('\n')}`, options);
    this.issues = issues;
  }
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** Formats a path as `a.b[2]["key.with.dots"]`; the empty path is `(root)`. */
export function formatConfigPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (typeof segment === 'string' && IDENTIFIER.test(segment))
      out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out === '' ? '(root)' : out;
}

function toConfigIssues(issues: readonly z.core.$ZodIssue[]): ConfigIssue[] {
  return issues.map((issue) => {
    // A record-key issue carries the key's own issues nested; their message is the useful one.
    const message =
      issue.code === 'invalid_key' ? issue.issues.map((nested) => nested.message).join('; ') : issue.message;
    return { path: formatConfigPath(issue.path), message };
  });
}

/**
 * Parses and validates a webhook config. A string is read as JSON text; anything else is taken
 * as the already-decoded value.
 *
 * @throws ConfigError naming each offending path, also for JSON syntax errors (with `cause`).
 */
export function parseWebhookConfig(json: unknown): WebhookConfig {
  let value = json;
  if (typeof json === 'string') {
    try {
      value = JSON.parse(json) as unknown;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new ConfigError([{ path: '(root)', message: `invalid JSON: ${message}` }], { cause: error });
    }
  }
  const result = webhookConfigSchema.safeParse(value, {
    error: (issue) => (issue.code === 'invalid_type' && issue.input === undefined ? 'required' : undefined),
  });
  if (!result.success) throw new ConfigError(toConfigIssues(result.error.issues));
  return result.data;
}
