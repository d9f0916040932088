/**
 * Setting one environment variable to a fixed value in every container of some lists: what the
 * FIPS and landscape features share.
 */
import { containersOf, type ContainerKind, type PodPatchBuilder } from './manipulation.js';
import type { EnvVar } from './pod.js';

function isWanted(entry: EnvVar, value: string): boolean {
  return entry.value === value && entry.valueFrom === undefined;
}

/** One variable to set: a plain value, never `valueFrom`. */
export interface WantedEnv {
  readonly name: string;
  readonly value: string;
}

/**
 * Leaves exactly one `{name, value}` per wanted variable in each container's env: appended when
 * absent (in the order given; a container without env gets them in one patch operation); the
 * first existing entry replaced when it has another value or a `valueFrom` (a Secret or ConfigMap
 * must not be able to override what the webhook sets, and upstream replaces it too); later
 * duplicates removed, since the kubelet lets the last duplicate win. Other entries are untouched.
 * Returns whether anything changed.
 */
export function ensureEnv(
  builder: PodPatchBuilder,
  kinds: readonly ContainerKind[],
  wanted: readonly WantedEnv[],
): boolean {
  let changed = false;
  for (const kind of kinds) {
    containersOf(builder.current, kind).forEach((container, index) => {
      const envPath = ['spec', kind, index, 'env'] as const;
      const env: unknown = container.env;
      if (!Array.isArray(env) || env.length === 0) {
        builder.set(
          envPath,
          wanted.map(({ name, value }): EnvVar => ({ name, value })),
        );
        changed = true;
        return;
      }
      for (const { name, value } of wanted) {
        if (ensureOne(builder, envPath, builder.current.spec?.[kind]?.[index]?.env ?? [], name, value)) {
          changed = true;
        }
      }
    });
  }
  return changed;
}

function ensureOne(
  builder: PodPatchBuilder,
  envPath: readonly (string | number)[],
  entries: readonly EnvVar[],
  name: string,
  value: string,
): boolean {
  const matches: number[] = [];
  entries.forEach((entry, i) => {
    if (entry.name === name) matches.push(i);
  });
  const [first, ...duplicates] = matches;
  if (first === undefined) {
    builder.append(envPath, { name, value } satisfies EnvVar);
    return true;
  }
  let changed = false;
  const entry = entries[first];
  if (entry !== undefined && !isWanted(entry, value)) {
    builder.set([...envPath, first], { name, value } satisfies EnvVar);
    changed = true;
  }
  // From the back, so the indices still to remove stay valid.
  for (const i of duplicates.reverse()) {
    builder.remove([...envPath, i]);
    changed = true;
  }
  return changed;
}
