/**
 * Feature `rt-cfg.kyma-project.io/set-landscape`: env `KYMA_LANDSCAPE=<landscape>` in every
 * container and init container, so workloads can behave per landscape.
 */
import { ENV_LANDSCAPE } from '../api/webhook-features.js';
import { ensureEnv } from './ensure-env.js';
import {
  REGULAR_CONTAINER_KINDS,
  type ContainerKind,
  type ManipulationResult,
  type PodPatchBuilder,
} from './manipulation.js';

/** Options of setLandscape. */
export interface SetLandscapeOptions {
  /** The landscape (`rtb webhook --landscape`, or the config's `landscape`). */
  readonly landscape: string;
  /** The container lists to visit; containers and init containers by default. */
  readonly containerKinds?: readonly ContainerKind[] | undefined;
}

/**
 * Leaves exactly one `{name: KYMA_LANDSCAPE, value: landscape}` in each container's env: a
 * different value or a `valueFrom` is replaced (as upstream does), never doubled (see ensureEnv).
 */
export function setLandscape(builder: PodPatchBuilder, options: SetLandscapeOptions): ManipulationResult {
  const kinds = options.containerKinds ?? REGULAR_CONTAINER_KINDS;
  const changed = ensureEnv(builder, kinds, [{ name: ENV_LANDSCAPE, value: options.landscape }]);
  return { changed, warnings: [] };
}
