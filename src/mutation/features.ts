/**
 * Which features apply to a Pod: the decision table of DESIGN.md section 3.
 */
import { type WebhookConfig } from '../api/webhook-config.js';
import { expandFeatureKeys, FEATURE_ALL, type Feature, type FeatureKey } from '../api/webhook-features.js';

/** Everything the decision depends on. */
export interface FeatureSelectionInput {
  readonly config: Pick<WebhookConfig, 'availableFeatures' | 'namespaceFeatures'>;
  /** The Pod's namespace; empty means `default` (as the API server reads a Pod without one). */
  readonly namespaceName: string;
  readonly namespaceAnnotations?: Readonly<Record<string, string>> | undefined;
  readonly podAnnotations?: Readonly<Record<string, string>> | undefined;
}

const NO_FEATURES: ReadonlySet<Feature> = new Set();

/** The namespace an empty namespace name stands for. */
export const DEFAULT_NAMESPACE = 'default';

// Own members only: a namespace or annotation called "constructor" must not find Object's.
function lookup<V>(map: Readonly<Record<string, V>> | null | undefined, key: string): V | undefined {
  // JSON may carry `annotations: null`: a map that says nothing.
  return map !== undefined && map !== null && Object.hasOwn(map, key) ? map[key] : undefined;
}

// Configs are replaced, never edited, so an expanded key list can be cached by its array.
const expanded = new WeakMap<readonly FeatureKey[], Set<Feature>>();

function expandCached(keys: readonly FeatureKey[]): Set<Feature> {
  let features = expanded.get(keys);
  if (features === undefined) {
    features = expandFeatureKeys(keys);
    expanded.set(keys, features);
  }
  return features;
}

/**
 * What one level's annotations say about a feature (upstream's ExpandAnnotationAll): the
 * feature's own key, whatever its value, shadows `all` at that level; undefined when silent.
 */
function levelSays(
  annotations: Readonly<Record<string, string>> | undefined,
  feature: Feature,
): string | undefined {
  return lookup(annotations, feature) ?? lookup(annotations, FEATURE_ALL);
}

/**
 * Selects the features to apply, in FEATURES order. A feature applies when it is available
 * (config `availableFeatures`, where `all` means all five) and one of three levels opts it in:
 * the config's `namespaceFeatures` for the namespace (`all` meaning every available feature), the
 * Namespace's annotations, or the Pod's annotations; unless the Pod opts it out.
 *
 * At each annotation level the feature's own key, with any value, shadows `all` for that feature
 * (upstream's rule); only `all` is read when the own key is absent. What a level then says:
 *
 * | value that counts | Namespace annotations | Pod annotations                           |
 * | ----------------- | --------------------- | ----------------------------------------- |
 * | `"true"`          | opts in               | opts in                                   |
 * | `"false"`         | nothing               | opts out, whatever the other levels say   |
 * | anything else     | nothing               | nothing                                   |
 * | (no key at all)   | nothing               | nothing                                   |
 *
 * Examples: Pod `all: "false"` + `set-fips-mode: "true"` gives FIPS only (and opts out of
 * every other feature); Namespace `all: "true"` + `set-fips-mode: "restart"` gives every available
 * feature but FIPS from that Namespace; Pod `all: "true"` + `add-cluster-trust-bundle: "no"`
 * leaves the trust bundle to the other levels.
 *
 * Decisions where the contract is silent:
 * - A Namespace annotation `"false"` is not an opt-out (the contract gives that to Pods alone),
 *   so it cannot switch off the config's namespace defaults.
 * - Values are compared exactly: only `"true"` and `"false"` count.
 */
export function selectFeatures(input: FeatureSelectionInput): Set<Feature> {
  const available = expandCached(input.config.availableFeatures);
  const selected = new Set<Feature>();
  if (available.size === 0) return selected;

  const namespace = input.namespaceName === '' ? DEFAULT_NAMESPACE : input.namespaceName;
  const defaults = lookup(input.config.namespaceFeatures, namespace);
  const namespaceDefaults = defaults === undefined ? NO_FEATURES : expandCached(defaults);

  for (const feature of available) {
    const pod = levelSays(input.podAnnotations, feature);
    if (pod === 'false') continue;
    if (
      pod === 'true' ||
      namespaceDefaults.has(feature) ||
      levelSays(input.namespaceAnnotations, feature) === 'true'
    ) {
      selected.add(feature);
    }
  }
  return selected;
}
