/**
 * The webhook's names shared with upstream and KIM: its feature keys (config and annotations),
 * the marks it puts on Pods, the environment it sets and where its config lives on a runtime.
 */
/** Opt-in/opt-out annotation and config key: rewrite image registries by `overrides`. */
export const FEATURE_ALTER_IMG_REGISTRY = 'rt-cfg.kyma-project.io/alter-img-registry';
/** Append the pull Secret to `.spec.imagePullSecrets`. */
export const FEATURE_ADD_IMG_PULL_SECRET = 'rt-cfg.kyma-project.io/add-img-pull-secret';
/** Set env `KYMA_FIPS_MODE_ENABLED=true` and `FIPS_MODE_ENABLED=true` in every container and init container. */
export const FEATURE_SET_FIPS_MODE = 'rt-cfg.kyma-project.io/set-fips-mode';
/** Mount the ClusterTrustBundle as a projected volume in every container and init container. */
export const FEATURE_ADD_CLUSTER_TRUST_BUNDLE = 'rt-cfg.kyma-project.io/add-cluster-trust-bundle';
/** Set env `KYMA_LANDSCAPE=<landscape>` in every container and init container. */
export const FEATURE_SET_LANDSCAPE = 'rt-cfg.kyma-project.io/set-landscape';
/** Alias for all five features. */
export const FEATURE_ALL = 'rt-cfg.kyma-project.io/all';

/** The five features, in the order the pipeline applies them. */
export const FEATURES = [
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_SET_FIPS_MODE,
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
  FEATURE_SET_LANDSCAPE,
] as const;
/** One concrete feature. */
export type Feature = (typeof FEATURES)[number];

/** Every key accepted in `availableFeatures`, `namespaceFeatures` and annotations. */
export const FEATURE_KEYS = [...FEATURES, FEATURE_ALL] as const;
/** A feature or the `all` alias. */
export type FeatureKey = (typeof FEATURE_KEYS)[number];

/** Annotation set to `"true"` on every Pod the webhook changed (the seed's name). */
export const ANNOTATION_DEFAULTED = 'rt-bootstrapper.kyma-project.io/defaulted';
/** Annotation set to `"true"` on every Pod the webhook changed (upstream's current name). */
export const ANNOTATION_MODIFIED = 'rt-bootstrapper.kyma-project.io/modified';
/** The FIPS environment variable. */
export const ENV_FIPS_MODE = 'KYMA_FIPS_MODE_ENABLED';
/** The legacy FIPS environment variable some modules read instead; set together with ENV_FIPS_MODE. */
export const ENV_FIPS_MODE_LEGACY = 'FIPS_MODE_ENABLED';
/** The landscape environment variable. */
export const ENV_LANDSCAPE = 'KYMA_LANDSCAPE';

/** Namespace of the config ConfigMap on a runtime. */
export const CONFIG_MAP_NAMESPACE = 'kyma-system';
/** Name of the config ConfigMap. */
export const CONFIG_MAP_NAME = 'rt-bootstrapper-config';
/** The ConfigMap data key holding the JSON. */
export const CONFIG_MAP_KEY = 'rt-bootstrapper-config.json';

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
