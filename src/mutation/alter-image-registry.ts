/**
 * Feature `rt-cfg.kyma-project.io/alter-img-registry`: rewrite each container image's registry
 * by the config's `overrides`, but for the images its `overrideExclusions` names.
 */
import type { ImageRewriter } from '../image/registry-rewrite.js';
import {
  ALL_CONTAINER_KINDS,
  containerLabel,
  containersOf,
  type ContainerKind,
  type ManipulationResult,
  type PodPatchBuilder,
} from './manipulation.js';
import type { Pod } from './pod.js';

/** Options of alterImageRegistry. */
export interface AlterImageRegistryOptions {
  /** The rewriter built from the config's overrides and exclusions (createRegistryRewriter). */
  readonly rewrite: ImageRewriter;
  /** The container lists to visit; all three by default. */
  readonly containerKinds?: readonly ContainerKind[] | undefined;
  /**
   * The Pod as it was before this request (UPDATE). When given, an image is rewritten only if
   * it differs from the image of the same-named container there, i.e. only when the request
   * itself changes it, and a container that already existed in an ephemeral list is left alone.
   * Rewriting an unchanged image of a running Pod would restart the container just because
   * someone edited a label, and the API server refuses any change to an existing ephemeral
   * container.
   */
  readonly previous?: Pod | undefined;
}

function previousImage(
  previous: Pod | undefined,
  kind: ContainerKind,
  name: string,
): string | undefined | null {
  if (previous === undefined) return null;
  const match = containersOf(previous, kind).find((c) => c.name === name);
  if (match === undefined) return null;
  return match.image;
}

/**
 * Rewrites the images of the Pod's containers. An image that cannot be parsed or rewritten is
 * left as it is, with a warning; the others are still rewritten.
 */
export function alterImageRegistry(
  builder: PodPatchBuilder,
  options: AlterImageRegistryOptions,
): ManipulationResult {
  const warnings: string[] = [];
  let changed = false;
  for (const kind of options.containerKinds ?? ALL_CONTAINER_KINDS) {
    containersOf(builder.current, kind).forEach((container, index) => {
      const image = container.image;
      if (typeof image !== 'string' || image === '') return;
      const before = previousImage(options.previous, kind, container.name);
      if (before !== null && (kind === 'ephemeralContainers' || before === image)) return;
      let rewritten: string | undefined;
      try {
        rewritten = options.rewrite(image);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        warnings.push(`${containerLabel(kind, index, container)}: image left unchanged: ${reason}`);
        return;
      }
      if (rewritten === undefined) return;
      builder.set(['spec', kind, index, 'image'], rewritten);
      changed = true;
    });
  }
  return { changed, warnings };
}
