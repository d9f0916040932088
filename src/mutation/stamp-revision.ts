/**
 * The revision stamp (DESIGN §11): a Pod we changed carries the set version it was changed under
 * (label and annotation), and the images it asked for where we rewrote them, so the webhook can
 * tell the failures a change causes from the rest, and a preflight can move the originals.
 * Runs last, on a Pod that changed; the same Pod under the same set gets the same stamp, so the
 * Pods of one template stay alike.
 *
 * The stamp counts only where our admission set it (DESIGN §14): a Pod's creator may write the
 * same keys, so on a Pod we do not change they are removed (CREATE) or put back as the stored Pod
 * had them (UPDATE), and on a Pod we change they are overwritten ({@link scrubRevision}). A CREATE
 * that carries exactly our stamp keeps it ({@link isOwnStamp}): the API server calls us again after
 * a later webhook changed the Pod (reinvocation), and such a stamp says nothing we would not say.
 */
import { asJsonObject } from '../api/json-object.js';
import { ORIGINAL_IMAGES_ANNOTATION, REVISION_ANNOTATION, REVISION_LABEL } from '../api/workload-health.js';
import type { ImageRewriter } from '../image/registry-rewrite.js';
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
 * changed, merged over what the stored Pod's annotation says (an UPDATE keeps the originals of
 * containers it does not change; the request's own annotation is the requester's word, not ours).
 */
function originalImages(
  builder: PodPatchBuilder,
  input: Pod,
  previous: Pod | undefined,
  rewrite: ImageRewriter | undefined,
): Record<string, string> | undefined {
  const known =
    previous !== undefined
      ? parseOriginals(annotationOf(previous, ORIGINAL_IMAGES_ANNOTATION))
      : consistentOriginals(input, rewrite, parseOriginals(annotationOf(input, ORIGINAL_IMAGES_ANNOTATION)));
  for (const [name, { from }] of rewrittenImages(input, builder.current)) known[name] = from;
  return Object.keys(known).length > 0 ? known : undefined;
}

/**
 * Of `originals` (container name → image asked for), those whose container runs exactly what
 * `rewrite` makes of that image: what our own rewrite would have recorded, whoever wrote it.
 */
export function consistentOriginals(
  pod: Pod,
  rewrite: ImageRewriter | undefined,
  originals: Readonly<Record<string, string>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  if (rewrite === undefined) return out;
  const images = new Map<string, unknown>();
  for (const kind of ALL_CONTAINER_KINDS)
    for (const c of containersOf(pod, kind)) if (typeof c.name === 'string') images.set(c.name, c.image);
  for (const [name, from] of Object.entries(originals)) {
    let to: string | undefined;
    try {
      to = rewrite(from);
    } catch {
      to = undefined;
    }
    if (to !== undefined && images.get(name) === to) out[name] = from;
  }
  return out;
}

/**
 * Whether `pod` carries exactly the stamp we give under `revision`: the label (where the revision
 * can be one) and annotation, and original images each of which its container runs rewritten by
 * `rewrite`. A CREATE we are called on again after another webhook changed it carries such a stamp.
 */
export function isOwnStamp(pod: Pod, revision: string, rewrite: ImageRewriter | undefined): boolean {
  if (annotationOf(pod, REVISION_ANNOTATION) !== revision) return false;
  if (labelOf(pod, REVISION_LABEL) !== (isLabelValue(revision) ? revision : undefined)) return false;
  const text = annotationOf(pod, ORIGINAL_IMAGES_ANNOTATION);
  if (text === undefined) return true;
  const originals = parseOriginals(text);
  const count = Object.keys(originals).length;
  return (
    count > 0 &&
    JSON.stringify(originals) === text &&
    Object.keys(consistentOriginals(pod, rewrite, originals)).length === count
  );
}

function annotationOf(pod: Pod | undefined, key: string): unknown {
  return asJsonObject(pod?.metadata?.annotations)?.[key];
}

function labelOf(pod: Pod | undefined, key: string): unknown {
  return asJsonObject(pod?.metadata?.labels)?.[key];
}

/** Puts `path` to `want` (removed when undefined) unless it is that already. */
function putOrRemove(builder: PodPatchBuilder, path: readonly string[], have: unknown, want: unknown): void {
  if (have === want) return;
  if (want === undefined) builder.remove(path);
  else builder.set(path, want);
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
 * images of containers whose image the builder changed, over whatever the request carried under
 * those keys. `input` is the Pod as requested; `previous` the stored Pod of an UPDATE, whose
 * originals are kept for the containers this request does not rewrite; on a CREATE, the request's
 * own originals are kept only where `rewrite` (the overrides in force) makes them what runs.
 */
export function stampRevision(
  builder: PodPatchBuilder,
  input: Pod,
  revision: string,
  previous?: Pod,
  rewrite?: ImageRewriter,
): void {
  const originals = originalImages(builder, input, previous, rewrite);
  const current = builder.current;
  putOrRemove(
    builder,
    ['metadata', 'labels', REVISION_LABEL],
    labelOf(current, REVISION_LABEL),
    isLabelValue(revision) ? revision : undefined,
  );
  putOrRemove(
    builder,
    ['metadata', 'annotations', REVISION_ANNOTATION],
    annotationOf(current, REVISION_ANNOTATION),
    revision,
  );
  putOrRemove(
    builder,
    ['metadata', 'annotations', ORIGINAL_IMAGES_ANNOTATION],
    annotationOf(builder.current, ORIGINAL_IMAGES_ANNOTATION),
    originals === undefined ? undefined : JSON.stringify(originals),
  );
}

/**
 * On a Pod we do not change (or change under no set): the revision keys as our admission left
 * them, i.e. as the stored Pod has them on an UPDATE (`previous`), absent on a CREATE. Whatever
 * the request itself put there is its creator's word and would let a namespace's user speak for
 * the change (a forged revision on a Pod whose image cannot pull).
 */
export function scrubRevision(builder: PodPatchBuilder, previous: Pod | undefined): void {
  const current = builder.current;
  putOrRemove(
    builder,
    ['metadata', 'labels', REVISION_LABEL],
    labelOf(current, REVISION_LABEL),
    labelOf(previous, REVISION_LABEL),
  );
  for (const key of [REVISION_ANNOTATION, ORIGINAL_IMAGES_ANNOTATION])
    putOrRemove(
      builder,
      ['metadata', 'annotations', key],
      annotationOf(current, key),
      annotationOf(previous, key),
    );
}

/** Whether the request carries revision keys other than the stored Pod's (`previous`; none on a CREATE). */
export function carriesForeignRevision(pod: Pod, previous: Pod | undefined): boolean {
  return (
    labelOf(pod, REVISION_LABEL) !== labelOf(previous, REVISION_LABEL) ||
    annotationOf(pod, REVISION_ANNOTATION) !== annotationOf(previous, REVISION_ANNOTATION) ||
    annotationOf(pod, ORIGINAL_IMAGES_ANNOTATION) !== annotationOf(previous, ORIGINAL_IMAGES_ANNOTATION)
  );
}
