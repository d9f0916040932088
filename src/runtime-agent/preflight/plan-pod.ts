/**
 * What the preflight keeps of each listed Pod while it lists them all: what its plan reads
 * (./preflight-plan.ts) and nothing else. A Pod's creator writes its annotations (up to 256 KiB)
 * and images, so a value longer than any the plan can use is kept as a short stand-in that reads
 * the same way: an original-images annotation too long to be ours is dropped (the container's
 * image counts, as for a malformed one), and an image longer than any reference becomes one
 * that does not parse (counted as unparseable, as it was).
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { isFeatureKey } from '../../api/webhook-features.js';
import { ORIGINAL_IMAGES_ANNOTATION } from '../../api/workload-health.js';

/** One of our annotations at most, the original images the longest (30 containers of 500-character images). */
export const MAX_ORIGINAL_IMAGES_CHARS = 16 << 10;
/** An image reference at most: a name of 255 characters, a tag of 128 and a digest, with room. */
export const MAX_IMAGE_CHARS = 1024;
/** Our annotations (the original images, the revision): kept for the plan, each up to the bound above. */
const OUR_PREFIX = ORIGINAL_IMAGES_ANNOTATION.slice(0, ORIGINAL_IMAGES_ANNOTATION.indexOf('/') + 1);
/** Stands for an image longer than {@link MAX_IMAGE_CHARS}: not a reference, as that one was not. */
const OVERSIZED_IMAGE = '(oversized image)';

const slimContainers = (
  list: readonly { name?: string; image?: string }[] | undefined,
): V1Container[] | undefined =>
  list?.map((c) => ({
    name: c.name ?? '',
    image: c.image === undefined || c.image.length <= MAX_IMAGE_CHARS ? c.image : OVERSIZED_IMAGE,
  }));

/** The parts of `pod` the preflight plan reads (the list's transform; pure). */
export function planPodOf(pod: V1Pod): V1Pod {
  const m = pod.metadata ?? {};
  let annotations: Record<string, string> | undefined;
  for (const [key, value] of Object.entries(m.annotations ?? {})) {
    const kept =
      isFeatureKey(key) || (key.startsWith(OUR_PREFIX) && value.length <= MAX_ORIGINAL_IMAGES_CHARS);
    if (kept) (annotations ??= {})[key] = value;
  }
  return {
    metadata: { name: m.name, namespace: m.namespace, annotations },
    spec: {
      containers: slimContainers(pod.spec?.containers) ?? [],
      initContainers: slimContainers(pod.spec?.initContainers),
      ephemeralContainers: slimContainers(pod.spec?.ephemeralContainers),
    },
  };
}
