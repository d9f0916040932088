/**
 * The pure core of the mutating admission webhook: one Pod in, the mutated Pod and the JSON Patch
 * that produces it out. No I/O: the caller fetches the Namespace, the config and whether the pull
 * Secret exists, and turns the result into an AdmissionReview response.
 */
import { type WebhookConfig } from '../api/webhook-config.js';
import {
  ANNOTATION_DEFAULTED,
  ANNOTATION_MODIFIED,
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_SET_FIPS_MODE,
  FEATURE_SET_LANDSCAPE,
  type Feature,
} from '../api/webhook-features.js';
import { createRegistryRewriter, type ImageRewriter } from '../image/registry-rewrite.js';
import { cachedSourcesOf, overridesLeaving } from '../image/cached-registries.js';
import { addClusterTrustBundle } from './add-cluster-trust-bundle.js';
import { addImagePullSecret } from './add-image-pull-secret.js';
import { alterImageRegistry } from './alter-image-registry.js';
import { selectFeatures } from './features.js';
import { ALL_CONTAINER_KINDS, type ContainerKind, type ManipulationResult } from './manipulation.js';
import { PatchBuilder, type PatchOperation } from './patch-builder.js';
import type { Pod } from './pod.js';
import { assertMutableSize } from './pod-size.js';
import { setFipsMode } from './set-fips-mode.js';
import { setLandscape } from './set-landscape.js';
import { carriesForeignRevision, isOwnStamp, scrubRevision, stampRevision } from './stamp-revision.js';
import { stampTrustBundle } from './stamp-trust-bundle.js';
import { isJsonObject } from '../api/json-object.js';
import { MOUNT, type TrustBundleMount, type TrustBundleSkipReason } from '../api/trust-bundle-capability.js';

/** The admission operations the webhook is registered for. */
export type AdmissionOperation = 'CREATE' | 'UPDATE';

/** The subresource through which ephemeral containers are added to a running Pod. */
export const EPHEMERAL_CONTAINERS_SUBRESOURCE = 'ephemeralcontainers';

/** Everything mutatePod needs; all of it comes from the AdmissionReview and caches. */
export interface MutatePodInput {
  /** The Pod from the request (`request.object`); never modified. */
  readonly pod: Pod;
  readonly operation: AdmissionOperation;
  /** `request.subResource`; empty or absent for the Pod itself. */
  readonly subResource?: string | undefined;
  /** `request.oldObject` on UPDATE; limits image rewriting to images the request changes. */
  readonly oldPod?: Pod | undefined;
  /** The Pod's namespace (`request.namespace`; empty means `default`) and its annotations. */
  readonly namespace: {
    readonly name: string;
    readonly annotations?: Readonly<Record<string, string>> | undefined;
  };
  /**
   * The config as it applies on the runtime ({@link configOnRuntime}): derived by the caller once
   * per config and cached hosts, not per Pod (the rewriter below is kept per overrides object).
   */
  readonly config: WebhookConfig;
  /** Whether the pull Secret exists in the Pod's namespace. */
  readonly pullSecretAvailable: boolean;
  /**
   * SHA-256 hex of the configured ClusterTrustBundle's `.spec.trustBundle` as the webhook knows it
   * (../api/trust-stamp.ts); undefined while unknown. Stamped on every Pod that gets the mount.
   */
  readonly trustBundleHash?: string | undefined;
  /**
   * Whether the runtime can take the trust-bundle mount (../api/trust-bundle-capability.ts);
   * mounted when absent. Where it cannot, the feature adds nothing (no volume, no mount, no stamp)
   * and says why in a warning.
   */
  readonly trustBundleMount?: TrustBundleMount | undefined;
  /**
   * The set version of the configuration in force (DESIGN §11); a Pod changed under it carries
   * it. Undefined where the configuration is no set of the KCP's (a file): then nothing is stamped.
   */
  readonly revision?: string | undefined;
}

/**
 * The config as it applies on the runtime: with `registryCaches: "leave"`, without the overrides
 * of hosts with a customer's registry cache there (`cached`: canonical hosts,
 * ../api/registry-caches.ts); otherwise the config itself.
 */
export function configOnRuntime(
  config: WebhookConfig,
  cached: ReadonlySet<string> | undefined,
): WebhookConfig {
  if (config.registryCaches !== 'leave' || cached === undefined) return config;
  const overrides = overridesLeaving(config.overrides, cachedSourcesOf(config.overrides, cached));
  return overrides === config.overrides ? config : { ...config, overrides };
}

/** What mutatePod decided and did. */
export interface MutatePodResult {
  /** The mutated Pod (the input itself when nothing changed); shares unchanged parts with the input. */
  readonly pod: Pod;
  /** RFC 6902 operations against the input; empty when nothing changed. */
  readonly patch: readonly PatchOperation[];
  /** Features that apply to the Pod (and were allowed by the operation), in FEATURES order. */
  readonly selected: readonly Feature[];
  /** Features that actually changed the Pod. */
  readonly applied: readonly Feature[];
  /** Things asked for but not done, for logs and events. */
  readonly warnings: readonly string[];
  /** True when a pull-Secret reference was wanted but the Secret is unavailable (for metrics). */
  readonly pullSecretSkipped: boolean;
  /** Set when the trust bundle was wanted but not mounted because the runtime cannot take it (for metrics). */
  readonly trustBundleSkipped?: TrustBundleSkipReason | undefined;
}

/** What one request may change. */
type Scope =
  | { readonly kind: 'full' }
  | { readonly kind: 'images'; readonly containerKinds: readonly ContainerKind[] }
  | { readonly kind: 'none'; readonly reason: string };

/**
 * The API server lets an UPDATE change only container and init-container images (and metadata),
 * and the ephemeralcontainers subresource only the new ephemeral containers; anything else would
 * make it refuse the request. Other subresources do not carry a Pod at all.
 */
function scopeOf(operation: AdmissionOperation, subResource: string | undefined): Scope {
  if (subResource === undefined || subResource === '') {
    return operation === 'CREATE'
      ? { kind: 'full' }
      : { kind: 'images', containerKinds: ['containers', 'initContainers'] };
  }
  if (subResource === EPHEMERAL_CONTAINERS_SUBRESOURCE)
    return { kind: 'images', containerKinds: ['ephemeralContainers'] };
  return { kind: 'none', reason: `subresource ${JSON.stringify(subResource)} is not mutated` };
}

// Configs are replaced, never edited, so the overrides object (with the exclusions beside it)
// identifies its rewriter; this keeps target parsing off the per-request path.
const rewriters = new WeakMap<
  object,
  { readonly exclusions: readonly string[] | undefined; readonly rewrite: ImageRewriter }
>();

type RewriteRules = Pick<WebhookConfig, 'overrides' | 'overrideExclusions'>;

function rewriterFor({ overrides, overrideExclusions }: RewriteRules): ImageRewriter {
  const known = rewriters.get(overrides);
  if (known !== undefined && known.exclusions === overrideExclusions) return known.rewrite;
  const rewrite = createRegistryRewriter(overrides, overrideExclusions);
  rewriters.set(overrides, { exclusions: overrideExclusions, rewrite });
  return rewrite;
}

/** The rewriter of the config's rules for reading a stamp back; none where they are unusable. */
function stampRewriter(rules: RewriteRules): ImageRewriter | undefined {
  try {
    return rewriterFor(rules);
  } catch {
    return undefined;
  }
}

// The two marks as one annotations map, for a Pod that has none (one patch operation).
const MARKS: Readonly<Record<string, string>> = {
  [ANNOTATION_DEFAULTED]: 'true',
  [ANNOTATION_MODIFIED]: 'true',
};

function markChanged(builder: PatchBuilder<Pod>): void {
  // JSON may carry `annotations: null`; then the whole map is set, as for an absent one.
  const annotations: unknown = builder.current.metadata?.annotations;
  if (annotations === undefined || annotations === null) {
    builder.set(['metadata', 'annotations'], MARKS);
    return;
  }
  const current = annotations as Readonly<Record<string, string>>;
  if (current[ANNOTATION_DEFAULTED] !== 'true')
    builder.set(['metadata', 'annotations', ANNOTATION_DEFAULTED], 'true');
  if (current[ANNOTATION_MODIFIED] !== 'true')
    builder.set(['metadata', 'annotations', ANNOTATION_MODIFIED], 'true');
}

/**
 * Why the Pod cannot be patched sensibly, if it cannot: without a `spec` object every edit would
 * add or replace the whole `spec` (a `spec: null` once got `replace /spec`), and a `metadata` that
 * is not an object would be replaced to hold the marks. The API server never sends such a Pod
 * (it defaults `spec` before calling webhooks); it comes only from a client calling us directly,
 * and is answered allowed, unchanged, for the API server's validation to refuse.
 */
function podShapeProblem(pod: Pod): string | undefined {
  const { spec, metadata } = pod as { spec?: unknown; metadata?: unknown };
  if (!isJsonObject(spec)) return 'the Pod has no spec object; not changed';
  if (metadata !== undefined && !isJsonObject(metadata))
    return 'the Pod has a metadata that is not an object; not changed';
  return undefined;
}

/**
 * Applies the selected features to a Pod and returns the result with its JSON Patch.
 *
 * Features run in FEATURES order: alter-img-registry, add-img-pull-secret, set-fips-mode,
 * add-cluster-trust-bundle, set-landscape. A Pod that changed gets both
 * `rt-bootstrapper.kyma-project.io/defaulted: "true"` (the seed's name) and
 * `rt-bootstrapper.kyma-project.io/modified: "true"` (upstream's) and, under a set version, the
 * revision stamp (./stamp-revision.ts); an unchanged Pod gets no patch at all, but for revision
 * keys its requester wrote, which are removed (or put back as the stored Pod has them). Applying
 * the result again yields no patch.
 * Problems with single items (an unparseable image, a conflicting mount) become warnings; the rest
 * is still applied.
 *
 * @throws PodTooLargeError for a Pod with more containers than the webhook mutates (./pod-size.ts).
 */
export function mutatePod(input: MutatePodInput): MutatePodResult {
  const { pod, config } = input;
  assertMutableSize(pod);
  const scope = scopeOf(input.operation, input.subResource);
  // The stored Pod of an UPDATE: the revision keys it has are ours (or older than our webhook).
  const previous = input.operation === 'UPDATE' ? input.oldPod : undefined;
  const untouched = (warnings: string[], selected: readonly Feature[] = []): MutatePodResult => ({
    pod,
    patch: [],
    selected,
    applied: [],
    warnings,
    pullSecretSkipped: false,
  });
  // A Pod we do not change still loses revision keys its creator wrote (./stamp-revision.ts),
  // unless a CREATE carries exactly the stamp we give (called again after another webhook).
  const unchanged = (warnings: string[], selected: readonly Feature[] = []): MutatePodResult => {
    if (!carriesForeignRevision(pod, previous)) return untouched(warnings, selected);
    if (
      previous === undefined &&
      selected.length > 0 &&
      input.revision !== undefined &&
      isOwnStamp(pod, input.revision, stampRewriter(config))
    )
      return untouched(warnings, selected);
    const scrub = new PatchBuilder(pod);
    scrubRevision(scrub, previous);
    return { ...untouched(warnings, selected), pod: scrub.current, patch: scrub.operations };
  };
  if (scope.kind === 'none') return untouched([scope.reason]);

  const features = selectFeatures({
    config,
    namespaceName: input.namespace.name,
    namespaceAnnotations: input.namespace.annotations,
    podAnnotations: pod.metadata?.annotations,
  });
  if (scope.kind === 'images') {
    for (const feature of features) if (feature !== FEATURE_ALTER_IMG_REGISTRY) features.delete(feature);
  }
  const selected = [...features];
  if (selected.length === 0) return unchanged([]);
  const shapeProblem = podShapeProblem(pod);
  if (shapeProblem !== undefined) return untouched([shapeProblem], selected);

  const builder = new PatchBuilder(pod);
  const warnings: string[] = [];
  const applied: Feature[] = [];
  let pullSecretSkipped = false;
  let trustBundleSkipped: TrustBundleSkipReason | undefined;
  const record = (feature: Feature, result: ManipulationResult): void => {
    warnings.push(...result.warnings);
    if (result.changed) applied.push(feature);
  };

  if (features.has(FEATURE_ALTER_IMG_REGISTRY)) {
    let rewrite: ImageRewriter | undefined;
    try {
      rewrite = rewriterFor(config);
    } catch (error) {
      warnings.push(
        `overrides unusable, images left unchanged: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (rewrite !== undefined) {
      const images =
        scope.kind === 'images'
          ? { rewrite, containerKinds: scope.containerKinds, previous: input.oldPod }
          : { rewrite, containerKinds: ALL_CONTAINER_KINDS };
      record(FEATURE_ALTER_IMG_REGISTRY, alterImageRegistry(builder, images));
    }
  }
  if (features.has(FEATURE_ADD_IMG_PULL_SECRET)) {
    const result = addImagePullSecret(builder, {
      secretName: config.imagePullSecret.name,
      secretAvailable: input.pullSecretAvailable,
    });
    pullSecretSkipped = result.skipped !== undefined;
    record(FEATURE_ADD_IMG_PULL_SECRET, result);
  }
  if (features.has(FEATURE_SET_FIPS_MODE)) record(FEATURE_SET_FIPS_MODE, setFipsMode(builder));
  if (features.has(FEATURE_ADD_CLUSTER_TRUST_BUNDLE)) {
    const mount = input.trustBundleMount ?? MOUNT;
    if (config.clusterTrustBundle === undefined) {
      warnings.push('clusterTrustBundle is not configured; trust bundle not mounted');
    } else if (!mount.mount) {
      warnings.push(mount.warning);
      trustBundleSkipped = mount.reason;
    } else {
      const mounted = addClusterTrustBundle(builder, config.clusterTrustBundle);
      const stamped = stampTrustBundle(builder, config.clusterTrustBundle, input.trustBundleHash);
      record(FEATURE_ADD_CLUSTER_TRUST_BUNDLE, {
        changed: mounted.changed || stamped.changed,
        warnings: mounted.warnings,
      });
    }
  }
  if (features.has(FEATURE_SET_LANDSCAPE)) {
    // The webhook refuses such a config; only a config read off a runtime can get here.
    if (config.landscape === undefined) warnings.push('no landscape is known; KYMA_LANDSCAPE not set');
    else record(FEATURE_SET_LANDSCAPE, setLandscape(builder, { landscape: config.landscape }));
  }

  if (!builder.changed) return { ...unchanged(warnings, selected), pullSecretSkipped, trustBundleSkipped };
  markChanged(builder);
  if (input.revision !== undefined)
    stampRevision(builder, pod, input.revision, previous, stampRewriter(config));
  else scrubRevision(builder, previous);
  return {
    pod: builder.current,
    patch: builder.operations,
    selected,
    applied,
    warnings,
    pullSecretSkipped,
    trustBundleSkipped,
  };
}
