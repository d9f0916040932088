/**
 * What a preflight checks (DESIGN §11): of the images Pods run now, those a candidate set would
 * move to another registry, each with where it would go. Pure: the runner lists the Pods and
 * Namespaces and hands them over.
 */
import { asJsonObject } from '../../api/json-object.js';
import type { WebhookConfig } from '../../api/webhook-config.js';
import { FEATURE_ALTER_IMG_REGISTRY } from '../../api/webhook-features.js';
import { ORIGINAL_IMAGES_ANNOTATION } from '../../api/workload-health.js';
import { createRegistryRewriter } from '../../image/registry-rewrite.js';
import { selectFeatures } from '../../mutation/features.js';

/** Images a preflight checks at most, by default. */
export const DEFAULT_PREFLIGHT_MAX_IMAGES = 200;

/** A container as the plan reads it. */
export interface PlanContainer {
  readonly name?: string | undefined;
  readonly image?: string | undefined;
}

/** The parts of a Pod the plan reads (a listed V1Pod fits). */
export interface PlanPod {
  readonly metadata?:
    | {
        readonly namespace?: string | undefined;
        readonly annotations?: Readonly<Record<string, string>> | undefined;
      }
    | undefined;
  readonly spec?:
    | {
        readonly containers?: readonly PlanContainer[] | undefined;
        readonly initContainers?: readonly PlanContainer[] | undefined;
        readonly ephemeralContainers?: readonly PlanContainer[] | undefined;
      }
    | undefined;
}

/** The parts of a Namespace the plan reads. */
export interface PlanNamespace {
  readonly metadata?:
    | {
        readonly name?: string | undefined;
        readonly annotations?: Readonly<Record<string, string>> | undefined;
      }
    | undefined;
}

/** One image to check: where it is now and where the candidate would send it. */
export interface PlannedImage {
  /** The image as the Pod asked for it (before any rewrite of ours). */
  readonly image: string;
  /** The candidate's rewrite of it. */
  readonly target: string;
}

/** Input of {@link planPreflight}. */
export interface PreflightPlanInput {
  readonly pods: readonly PlanPod[];
  readonly namespaces: readonly PlanNamespace[];
  /** The candidate set's webhook configuration. */
  readonly config: Pick<
    WebhookConfig,
    'overrides' | 'overrideExclusions' | 'availableFeatures' | 'namespaceFeatures'
  >;
  /** Targets kept at most (default {@link DEFAULT_PREFLIGHT_MAX_IMAGES}); the rest are counted as skipped. */
  readonly maxImages?: number | undefined;
  /** Namespaces the webhook never mutates (its `--excluded-namespaces`): their Pods are not checked. */
  readonly excludedNamespaces?: readonly string[] | undefined;
}

/** What to check. */
export interface PreflightPlan {
  /** Distinct targets, sorted, at most `maxImages`. */
  readonly images: readonly PlannedImage[];
  /** Distinct targets left out by the count bound. */
  readonly skipped: number;
  /** Images that are not valid references (a runtime cannot pull them either): not checked. */
  readonly unparseable: number;
}

const CONTAINER_LISTS = ['containers', 'initContainers', 'ephemeralContainers'] as const;

/** The original-images annotation read back; empty when absent or malformed. */
export function readOriginalImages(value: string | undefined): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  if (value === undefined) return out;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return out;
  }
  for (const [name, image] of Object.entries(asJsonObject(parsed) ?? {}))
    if (typeof image === 'string' && image !== '') out.set(name, image);
  return out;
}

/**
 * Plans a preflight. For each Pod the candidate's alter-img-registry feature applies to (the
 * decision table of DESIGN §3 with the candidate's `availableFeatures` and `namespaceFeatures`, the
 * Namespace's and the Pod's annotations), each container's original image (from our
 * original-images annotation, else its image) is rewritten by the candidate's overrides (not one
 * its `overrideExclusions` names); the
 * images it moves are kept, one per target. Phase and node do not matter: a Pod's images are
 * what any of its restarts pulls. Targets are sorted so that the count bound keeps the same ones
 * on every replica and every run.
 */
export function planPreflight(input: PreflightPlanInput): PreflightPlan {
  const max = Math.max(0, input.maxImages ?? DEFAULT_PREFLIGHT_MAX_IMAGES);
  const excluded = new Set(input.excludedNamespaces ?? []);
  const namespaceAnnotations = new Map<string, Readonly<Record<string, string>> | undefined>();
  for (const ns of input.namespaces) {
    const name = ns.metadata?.name;
    if (name !== undefined) namespaceAnnotations.set(name, ns.metadata?.annotations);
  }
  // An image the candidate excludes stays where it is: nothing new to check.
  const rewrite = createRegistryRewriter(input.config.overrides, input.config.overrideExclusions);
  // Rewriting is a parse; many Pods share images, so each original is rewritten once.
  const rewritten = new Map<string, string | null | undefined>();
  const byTarget = new Map<string, string>();
  let unparseable = 0;

  for (const pod of input.pods) {
    const namespaceName = pod.metadata?.namespace ?? '';
    if (excluded.has(namespaceName)) continue;
    const features = selectFeatures({
      config: input.config,
      namespaceName,
      namespaceAnnotations: namespaceAnnotations.get(namespaceName === '' ? 'default' : namespaceName),
      podAnnotations: pod.metadata?.annotations,
    });
    if (!features.has(FEATURE_ALTER_IMG_REGISTRY)) continue;
    const originals = readOriginalImages(pod.metadata?.annotations?.[ORIGINAL_IMAGES_ANNOTATION]);
    for (const list of CONTAINER_LISTS) {
      for (const container of pod.spec?.[list] ?? []) {
        const original =
          (container.name !== undefined ? originals.get(container.name) : undefined) ?? container.image;
        if (original === undefined || original === '') continue;
        let target = rewritten.get(original);
        if (!rewritten.has(original)) {
          try {
            target = rewrite(original);
          } catch {
            // An invalid reference (or one the rewrite would make invalid): no pull works anyway.
            target = null;
            unparseable++;
          }
          rewritten.set(original, target);
        }
        if (typeof target === 'string' && !byTarget.has(target)) byTarget.set(target, original);
      }
    }
  }

  const targets = [...byTarget.keys()].sort();
  const images = targets.slice(0, max).map((target) => ({ image: byTarget.get(target) ?? target, target }));
  return { images, skipped: targets.length - images.length, unparseable };
}
