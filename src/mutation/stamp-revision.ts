/**
 * The revision stamp (DESIGN §11): a Pod we changed carries the set version it was changed under
 * (label and annotation), and the images it asked for where we rewrote them, so the webhook can
 * tell the failures a change causes from the rest, and a preflight can move the originals.
 * Runs last, on a Pod that changed; the same Pod under the same set gets the same stamp, so the
 * Pods of one template stay alike.
 */
import { asJsonObject } from '../api/json-object.js';
import { ORIGINAL_IMAGES_ANNOTATION, REVISION_ANNOTATION, REVISION_LABEL } from '../api/workload-health.js';
import { ALL_CONTAINER_KINDS, containersOf, type PodPatchBuilder } from './manipulation.js';
import type { Pod } from './pod.js';

// A label value: at most 63 characters, alphanumerics with `-`, `_`, `.` inside.
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;

/** Whether `value` can be a label value (a set version of ours always can). */
export function isLabelValue(value: string): boolean {
  return LABEL_VALUE.test(value);
}

/**
 * The containers whose image differs between `before` (the Pod as requested) and `after` (as
 * mutated): container name → the image asked for and the one it became. Mutations never add,
 * remove or reorder containers, so lists are compared by position.
 */
export function rewrittenImages(
  before: Pod,
  after: Pod,
): Map<string, { readonly from: string; readonly to: string }> {
  const out = new Map<string, { from: string; to: string }>();
  for (const kind of ALL_CONTAINER_KINDS) {
    const was = containersOf(before, kind);
    const now = containersOf(after, kind);
    for (let i = 0; i < now.length; i++) {
      const from = was[i]?.image;
      const to = now[i]?.image;
      const name = was[i]?.name;
      if (typeof name === 'string' && typeof from === 'string' && typeof to === 'string' && from !== to)
        out.set(name, { from, to });
    }
  }
  return out;
}

/**
 * Container name → image as the Pod asked for it, for every container whose image the builder
 * changed, merged over what the Pod's annotation already says (an UPDATE keeps the originals of
 * containers it does not change).
 */
function originalImages(builder: PodPatchBuilder, input: Pod): Record<string, string> | undefined {
  const changed = rewrittenImages(input, builder.current);
  if (changed.size === 0) return undefined;
  const known = parseOriginals(asJsonObject(input.metadata?.annotations)?.[ORIGINAL_IMAGES_ANNOTATION]);
  for (const [name, { from }] of changed) known[name] = from;
  return known;
}

/** The original-images annotation's value read back; empty when absent or not such an object. */
export function parseOriginals(value: unknown): Record<string, string> {
  if (typeof value !== 'string') return {};
  try {
    const parsed: unknown = JSON.parse(value);
    const object = asJsonObject(parsed);
    if (object === undefined) return {};
    const out: Record<string, string> = {};
    for (const [name, image] of Object.entries(object)) if (typeof image === 'string') out[name] = image;
    return out;
  } catch {
    return {};
  }
}

/**
 * Stamps `revision` (label where it is a valid label value, and annotation) and the original
 * images of containers whose image the builder changed. `input` is the Pod as requested.
 */
export function stampRevision(builder: PodPatchBuilder, input: Pod, revision: string): void {
  const originals = originalImages(builder, input);
  const labels = asJsonObject(builder.current.metadata?.labels);
  if (isLabelValue(revision) && labels?.[REVISION_LABEL] !== revision)
    builder.set(['metadata', 'labels', REVISION_LABEL], revision);
  const annotations = asJsonObject(builder.current.metadata?.annotations);
  if (annotations?.[REVISION_ANNOTATION] !== revision)
    builder.set(['metadata', 'annotations', REVISION_ANNOTATION], revision);
  if (originals !== undefined) {
    const text = JSON.stringify(originals);
    if (annotations?.[ORIGINAL_IMAGES_ANNOTATION] !== text)
      builder.set(['metadata', 'annotations', ORIGINAL_IMAGES_ANNOTATION], text);
  }
}
