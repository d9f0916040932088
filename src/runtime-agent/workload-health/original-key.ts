/**
 * The key of an original image (the image a Pod asked for, before our rewrite): what a runtime's
 * report names instead of the image itself, so that its lists of images that ran stay small and
 * runtimes compare them with each other (../../controller/rollout/regression.ts). The image is read
 * as a runtime reads it first (`nginx` is `docker.io/library/nginx:latest`).
 */
import { createHash } from 'node:crypto';
import { formatImageReference, parseImageReference } from '../../image/image-reference.js';

/** Hex characters of a key: 64 bits, so no one finds another image with the key of a given one. */
export const ORIGINAL_KEY_CHARS = 16;

/** The key of `image` (pure); an image that does not parse is keyed as written. */
export function originalKey(image: string): string {
  let canonical = image;
  try {
    const ref = parseImageReference(image);
    canonical = formatImageReference({
      ...ref,
      tag: ref.tag ?? (ref.digest === undefined ? 'latest' : undefined),
    });
  } catch {
    // Kept as written: such an image never pulls, nowhere, so its key matches only itself.
  }
  return createHash('sha256').update(canonical).digest('hex').slice(0, ORIGINAL_KEY_CHARS);
}
