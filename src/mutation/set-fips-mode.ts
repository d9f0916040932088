/**
 * Feature `rt-cfg.kyma-project.io/set-fips-mode`: env `KYMA_FIPS_MODE_ENABLED=true` in every
 * container and init container.
 */
import { ENV_FIPS_MODE } from '../api/webhook-config.js';
import {
  containersOf,
  REGULAR_CONTAINER_KINDS,
  type ContainerKind,
  type ManipulationResult,
  type PodPatchBuilder,
} from './manipulation.js';
import type { EnvVar } from './pod.js';

/** Options of setFipsMode. */
export interface SetFipsModeOptions {
  /** The container lists to visit; containers and init containers by default. */
  readonly containerKinds?: readonly ContainerKind[] | undefined;
}

function isWanted(entry: EnvVar): boolean {
  return entry.value === 'true' && entry.valueFrom === undefined;
}

/**
 * Leaves exactly one `{name: KYMA_FIPS_MODE_ENABLED, value: "true"}` in each container's env:
 * appended when absent; the first existing entry replaced when it has another value or a
 * `valueFrom` (a Secret or ConfigMap must not be able to turn FIPS off); later duplicates removed,
 * since the kubelet lets the last duplicate win. Other env entries are untouched.
 */
export function setFipsMode(builder: PodPatchBuilder, options: SetFipsModeOptions = {}): ManipulationResult {
  let changed = false;
  for (const kind of options.containerKinds ?? REGULAR_CONTAINER_KINDS) {
    containersOf(builder.current, kind).forEach((container, index) => {
      const envPath = ['spec', kind, index, 'env'] as const;
      const env: unknown = container.env;
      const entries = Array.isArray(env) ? (env as EnvVar[]) : [];
      const matches: number[] = [];
      entries.forEach((entry, i) => {
        if (entry.name === ENV_FIPS_MODE) matches.push(i);
      });

      const [first, ...duplicates] = matches;
      if (first === undefined) {
        builder.append(envPath, { name: ENV_FIPS_MODE, value: 'true' } satisfies EnvVar);
        changed = true;
        return;
      }
      const entry = entries[first];
      if (entry !== undefined && !isWanted(entry)) {
        builder.set([...envPath, first], { name: ENV_FIPS_MODE, value: 'true' } satisfies EnvVar);
        changed = true;
      }
      // From the back, so the indices still to remove stay valid.
      for (const i of duplicates.reverse()) {
        builder.remove([...envPath, i]);
        changed = true;
      }
    });
  }
  return { changed, warnings: [] };
}
