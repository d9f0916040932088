/**
 * Feature `rt-cfg.kyma-project.io/set-fips-mode`: env `KYMA_FIPS_MODE_ENABLED=true` and the legacy
 * `FIPS_MODE_ENABLED=true` in every container and init container (upstream sets both; modules
 * read either).
 */
import { ENV_FIPS_MODE, ENV_FIPS_MODE_LEGACY } from '../api/webhook-features.js';
import { ensureEnv } from './ensure-env.js';
import {
  REGULAR_CONTAINER_KINDS,
  type ContainerKind,
  type ManipulationResult,
  type PodPatchBuilder,
} from './manipulation.js';

/** Options of setFipsMode. */
export interface SetFipsModeOptions {
  /** The container lists to visit; containers and init containers by default. */
  readonly containerKinds?: readonly ContainerKind[] | undefined;
}

/** The FIPS variables, in the order they are appended (upstream's order). */
const FIPS_ENV = [
  { name: ENV_FIPS_MODE, value: 'true' },
  { name: ENV_FIPS_MODE_LEGACY, value: 'true' },
] as const;

/**
 * Leaves exactly one `{name, value: "true"}` for each FIPS variable in each container's env (see
 * ensureEnv: a different value or a `valueFrom` is replaced, so nothing can turn FIPS off).
 */
export function setFipsMode(builder: PodPatchBuilder, options: SetFipsModeOptions = {}): ManipulationResult {
  const changed = ensureEnv(builder, options.containerKinds ?? REGULAR_CONTAINER_KINDS, FIPS_ENV);
  return { changed, warnings: [] };
}
