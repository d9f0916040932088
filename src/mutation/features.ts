/**
 * Which features apply to a Pod: the decision table of DESIGN.md section 3.
 */
import {
  expandFeatureKeys,
  FEATURE_ALL,
  type Feature,
  type FeatureKey,
  type WebhookConfig,
} from '../api/webhook-config.js';

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
function lookup<V>(map: Readonly<Record<string, V>> | undefined, key: string): V | undefined {
  return map !== undefined && Object.hasOwn(map, key) ? map[key] : undefined;
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

/** The Pod's own verdict on a feature: the specific key first, then `all`; undefined if silent. */
function podVerdict(
  annotations: Readonly<Record<string, string>> | undefined,
  feature: Feature,
): boolean | undefined {
  for (const key of [feature, FEATURE_ALL]) {
    const value = lookup(annotations, key);
    if (value === 'true') return true;
    if (value === 'false') return false;
  }
  return undefined;
}

/**
 * Selects the features to apply, in FEATURES order. A feature applies when it is available
 * (config `availableFeatures`, where `all` means all four) and one of these opts in: the config's
 * `namespaceFeatures` for the namespace, a Namespace annotation `"true"` (feature key or `all`),
 * or a Pod annotation `"true"`. A Pod annotation `"false"` opts that Pod out, whatever the
 * namespace says.
 *
 * Decisions where the contract is silent:
 * - On the Pod, the specific key beats `all` (`all: "false"` plus `set-fips-mode: "true"` gives
 *   FIPS only), so a Pod can opt out of everything but one feature, or of one feature only.
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
  const namespaceAll = lookup(input.namespaceAnnotations, FEATURE_ALL) === 'true';

  for (const feature of available) {
    const verdict = podVerdict(input.podAnnotations, feature);
    if (verdict === false) continue;
    if (
      verdict === true ||
      namespaceDefaults.has(feature) ||
      namespaceAll ||
      lookup(input.namespaceAnnotations, feature) === 'true'
    ) {
      selected.add(feature);
    }
  }
  return selected;
}
