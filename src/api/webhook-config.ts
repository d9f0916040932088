/**
 * The webhook configuration: the JSON in ConfigMap `kyma-system/rt-bootstrapper-config`, key
 * `rt-bootstrapper-config.json`. Same shape as the upstream Go implementation (its `NewConfig`),
 * so existing landscapes' ConfigMaps work unchanged, plus optional fields of ours
 * (`imagePullSecret`, `failOpen`, `landscape`, `overrideExclusions`).
 *
 * Every config upstream accepts is accepted: it is read as Go's decoder reads it (first JSON
 * value only, field names matched case-insensitively, unknown fields ignored), and what upstream
 * lets through but cannot take effect (an override that is not registry-shaped, a namespace name
 * that is no namespace, no `availableFeatures`, the trust-bundle feature without its block) is
 * kept and reported as a warning naming the field. A config is refused, naming every offending
 * field, only for what upstream refuses (wrong JSON types, an unknown feature key, a namespace
 * default outside a non-empty `availableFeatures`, an empty required trust-bundle field) or what
 * cannot work (`set-landscape` available where no landscape is known; a malformed field of ours).
 * Where we accept more than upstream (an absent `overrides`, `all` in `availableFeatures`, absent
 * trust-bundle `volumeName`/`volumeMountPath`), docs/upstream-differences.md says so.
 */
import { z } from 'zod';
import { overrideFindings } from '../image/registry-rewrite.js';
import { MAX_REFERENCE_LENGTH } from '../image/image-reference.js';
import { MAX_OVERRIDE_EXCLUSIONS, overrideExclusionProblem } from '../image/override-exclusions.js';
import { parseFirstJsonValue, pickFieldTree, type FieldTree } from './go-json.js';
import { REGISTRY_CACHE_MODES, type RegistryCacheMode } from './registry-caches.js';
import {
  resolveTrustBundle,
  TRUST_BUNDLE_FIELDS,
  trustBundleBlockSchema,
  type ClusterTrustBundleConfig,
} from './trust-bundle-config.js';
import {
  DEFAULT_PULL_SECRET_NAME,
  DEFAULT_PULL_SECRET_NAMESPACE,
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
  FEATURE_ALL,
  FEATURE_KEYS,
  FEATURE_SET_LANDSCAPE,
  type Feature,
  type FeatureKey,
  expandFeatureKeys,
} from './webhook-features.js';

// Kubernetes name rules (apimachinery validation): DNS-1123 label for namespaces, DNS-1123
// subdomain for Secret names.
const DNS1123_LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS1123_SUBDOMAIN =
  /^(?=.{1,253}$)[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;

const dnsLabel = (what: string) =>
  z.string().regex(DNS1123_LABEL, { error: `invalid ${what}: must be a DNS-1123 label` });

const featureKey = z.enum(FEATURE_KEYS, {
  error: (issue) =>
    typeof issue.input === 'string'
      ? `unknown feature ${JSON.stringify(issue.input)}`
      : 'expected a feature key string',
});
// Go decodes JSON null into a slice or map as "absent", and into a string as "".
const featureList = z.array(featureKey).nullish();

const imagePullSecret = z.object({
  name: z
    .string()
    .regex(DNS1123_SUBDOMAIN, { error: 'invalid Secret name: must be a DNS-1123 subdomain' })
    .default(DEFAULT_PULL_SECRET_NAME),
  namespace: dnsLabel('namespace').default(DEFAULT_PULL_SECRET_NAMESPACE),
});

/** The zod schema of the JSON's types; prefer readWebhookConfig, which also checks meaning. */
export const webhookConfigSchema = z.object({
  overrides: z.record(z.string(), z.string().nullable()).nullish(),
  clusterTrustBundle: trustBundleBlockSchema.nullish(),
  availableFeatures: featureList,
  namespaceFeatures: z.record(z.string(), featureList).nullish(),
  /** Ours: the pull Secret's name (in Pods and namespaces) and its source namespace. */
  imagePullSecret: imagePullSecret.prefault({}),
  /** Ours: on an internal error answer "allowed" without a patch (true) or refuse the Pod. */
  failOpen: z.boolean().default(true),
  /** Ours: whether hosts with a customer's registry cache are still rewritten (./registry-caches.ts). */
  registryCaches: z.enum(REGISTRY_CACHE_MODES).nullish(),
  /** Ours: the landscape for `set-landscape` when the webhook has no `--landscape`. */
  landscape: z.string().optional(),
  /** Ours: images the overrides never rewrite (../image/override-exclusions.ts); bounded, read per image. */
  overrideExclusions: z.array(z.string().max(MAX_REFERENCE_LENGTH)).max(MAX_OVERRIDE_EXCLUSIONS).nullish(),
});

/** The config as accepted on input (optional fields may be omitted). */
export type WebhookConfigInput = z.input<typeof webhookConfigSchema>;

/** The pull-Secret settings with defaults filled in. */
export type ImagePullSecretConfig = z.output<typeof imagePullSecret>;

/** The config after reading, with every default filled in. Configs are replaced, never edited. */
export interface WebhookConfig {
  /** Every override as given (null targets read as ""); unusable ones are skipped when rewriting. */
  readonly overrides: Readonly<Record<string, string>>;
  /** Absent when not configured or not usable (then nothing is mounted). */
  readonly clusterTrustBundle?: ClusterTrustBundleConfig | undefined;
  readonly availableFeatures: readonly FeatureKey[];
  readonly namespaceFeatures: Readonly<Record<string, readonly FeatureKey[]>>;
  readonly imagePullSecret: ImagePullSecretConfig;
  readonly failOpen: boolean;
  /** `leave`: images of a host with a customer's cache on the runtime are not rewritten; absent: `rewrite`. */
  readonly registryCaches?: RegistryCacheMode | undefined;
  /** The landscape in force: `--landscape` when given, else the config's `landscape`. */
  readonly landscape?: string | undefined;
  /** Image references and repository prefixes the overrides never rewrite; absent when none. */
  readonly overrideExclusions?: readonly string[] | undefined;
}

/** Where a config is read, which decides what a missing landscape means. */
export interface ReadWebhookConfigOptions {
  /**
   * Set where the config is applied to Pods (`rtb webhook`, `rtb mutate`), with that process's
   * `--landscape` if any; it wins over the config's `landscape`, as the flag is upstream's only
   * source. There, `set-landscape` available with no landscape known refuses the config (upstream
   * refuses to start). Left out where a config is only checked (the KCP), where the webhooks'
   * flags are unknown, so that case is a warning.
   */
  readonly runtime?: { readonly landscape?: string | undefined };
}

/** One reason a config was refused, or one thing worth a warning in an accepted config. */
export interface ConfigIssue {
  /** Where, e.g. `availableFeatures[2]`, `overrides["replace.me"]`, or `(root)`. */
  readonly path: string;
  readonly message: string;
}

/** An accepted config and what is doubtful in it (log each warning once per content). */
export interface ReadWebhookConfig {
  readonly config: WebhookConfig;
  readonly warnings: readonly ConfigIssue[];
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

// The fields Go's decoder knows (its and ours), for matching keys case-insensitively.
const FIELD_TREE: FieldTree = {
  ...Object.fromEntries(Object.keys(webhookConfigSchema.shape).map((f) => [f, null])),
  clusterTrustBundle: Object.fromEntries(TRUST_BUNDLE_FIELDS.map((f) => [f, null])),
  imagePullSecret: Object.fromEntries(Object.keys(imagePullSecret.shape).map((f) => [f, null])),
};

type Decoded = z.output<typeof webhookConfigSchema>;
type Report = (path: PropertyKey[], message: string) => void;

function checkNamespaceFeatures(
  decoded: Decoded,
  available: ReadonlySet<Feature>,
  warn: Report,
  refuse: Report,
): void {
  const entries = Object.entries(decoded.namespaceFeatures ?? {});
  if (available.size === 0 && entries.some(([, keys]) => (keys ?? []).length > 0)) {
    warn(['namespaceFeatures'], 'has no effect while availableFeatures is empty');
  }
  for (const [namespace, keys] of entries) {
    if (!DNS1123_LABEL.test(namespace))
      warn(['namespaceFeatures', namespace], 'not a namespace name: never matches');
    // As upstream: a default the catalog does not offer is a mistake, unless there is no catalog.
    (keys ?? []).forEach((key, index) => {
      if (key !== FEATURE_ALL && available.size > 0 && !available.has(key)) {
        refuse(['namespaceFeatures', namespace, index], `feature "${key}" is not in availableFeatures`);
      }
    });
  }
}

function resolveLandscape(
  decoded: Decoded,
  available: ReadonlySet<Feature>,
  options: ReadWebhookConfigOptions,
  warn: Report,
  refuse: Report,
): string | undefined {
  const own = decoded.landscape === '' ? undefined : decoded.landscape;
  const flag = options.runtime?.landscape === '' ? undefined : options.runtime?.landscape;
  if (flag !== undefined && own !== undefined && flag !== own) {
    warn(['landscape'], `"${own}" is overridden by --landscape "${flag}"`);
  }
  const landscape = flag ?? own;
  if (landscape === undefined && available.has(FEATURE_SET_LANDSCAPE)) {
    const keys = decoded.availableFeatures ?? [];
    const at = keys.includes(FEATURE_SET_LANDSCAPE)
      ? keys.indexOf(FEATURE_SET_LANDSCAPE)
      : keys.indexOf(FEATURE_ALL);
    const what = `"${FEATURE_SET_LANDSCAPE}" is available but no landscape is known`;
    if (options.runtime)
      refuse(['availableFeatures', at], `${what}: start the webhook with --landscape or set "landscape"`);
    else warn(['availableFeatures', at], `${what} here: each webhook needs --landscape, or set "landscape"`);
  }
  return landscape;
}

/**
 * Reads and checks a webhook config, returning it with its warnings. A string is read as JSON
 * text the way Go's decoder reads it; anything else is taken as the already-decoded value.
 *
 * @throws ConfigError naming each offending path, also for JSON syntax errors (with `cause`).
 */
export function readWebhookConfig(json: unknown, options: ReadWebhookConfigOptions = {}): ReadWebhookConfig {
  const warnings: ConfigIssue[] = [];
  const issues: ConfigIssue[] = [];
  const warn: Report = (path, message) => warnings.push({ path: formatConfigPath(path), message });
  const refuse: Report = (path, message) => issues.push({ path: formatConfigPath(path), message });

  let value = json;
  if (typeof json === 'string') {
    try {
      const first = parseFirstJsonValue(json);
      value = first.value;
      if (first.trailing) warn([], 'text after the first JSON value is ignored');
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new ConfigError([{ path: '(root)', message: `invalid JSON: ${message}` }], { cause: error });
    }
  }
  const fields = pickFieldTree(value, FIELD_TREE);
  for (const f of fields.folded) warn(f.path, `read as "${f.field}" (field names match case-insensitively)`);
  const result = webhookConfigSchema.safeParse(fields.value, {
    error: (issue) => (issue.code === 'invalid_type' && issue.input === undefined ? 'required' : undefined),
  });
  if (!result.success) throw new ConfigError(toConfigIssues(result.error.issues));
  const decoded = result.data;

  const availableFeatures = decoded.availableFeatures ?? [];
  const available = expandFeatureKeys(availableFeatures);
  if (available.size === 0) warn(['availableFeatures'], 'absent or empty: no feature is applied to any Pod');
  const overrides = Object.fromEntries(
    Object.entries(decoded.overrides ?? {}).map(([key, target]) => [key, target ?? '']),
  );
  for (const f of overrideFindings(overrides)) warn(['overrides', f.key], f.message);
  checkNamespaceFeatures(decoded, available, warn, refuse);
  let clusterTrustBundle: ClusterTrustBundleConfig | undefined;
  if (decoded.clusterTrustBundle) {
    const resolved = resolveTrustBundle(decoded.clusterTrustBundle);
    for (const w of resolved.warnings) warn(['clusterTrustBundle', w.field], w.message);
    clusterTrustBundle = resolved.config;
  } else if (available.has(FEATURE_ADD_CLUSTER_TRUST_BUNDLE)) {
    warn(
      ['clusterTrustBundle'],
      `absent while "${FEATURE_ADD_CLUSTER_TRUST_BUNDLE}" is available: nothing is mounted`,
    );
  }
  const landscape = resolveLandscape(decoded, available, options, warn, refuse);
  const overrideExclusions = decoded.overrideExclusions ?? [];
  overrideExclusions.forEach((entry, index) => {
    const problem = overrideExclusionProblem(entry);
    if (problem !== undefined) refuse(['overrideExclusions', index], problem);
  });
  if (issues.length > 0) throw new ConfigError(issues);

  const namespaceFeatures = Object.fromEntries(
    Object.entries(decoded.namespaceFeatures ?? {}).map(([namespace, keys]) => [namespace, keys ?? []]),
  );
  const config: WebhookConfig = {
    overrides,
    clusterTrustBundle,
    availableFeatures,
    namespaceFeatures,
    imagePullSecret: decoded.imagePullSecret,
    failOpen: decoded.failOpen,
    ...(decoded.registryCaches === 'leave' ? { registryCaches: decoded.registryCaches } : {}),
    landscape,
    ...(overrideExclusions.length > 0 ? { overrideExclusions } : {}),
  };
  return { config, warnings };
}

/**
 * Reads and checks a webhook config (see readWebhookConfig), dropping its warnings.
 *
 * @throws ConfigError naming each offending path, also for JSON syntax errors (with `cause`).
 */
export function parseWebhookConfig(json: unknown, options: ReadWebhookConfigOptions = {}): WebhookConfig {
  return readWebhookConfig(json, options).config;
}
