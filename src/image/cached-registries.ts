/**
 * The overrides in force on one runtime where the config leaves hosts with a customer's registry
 * cache to that cache (`registryCaches: "leave"`, ../api/registry-caches.ts): the overrides
 * without the sources the runtime caches. Pure; the webhook, `rtb mutate` and the escaped-Pod
 * count all read the overrides through this, so they agree.
 */
import { canonicalRegistry } from './image-reference.js';
import { usableOverrides } from './registry-rewrite.js';

/**
 * Of `cached` (canonical registry hosts with a customer's cache), those `overrides` rewrite,
 * sorted: what a runtime reports, and what `leave` takes out of the overrides.
 */
export function cachedSourcesOf(
  overrides: Readonly<Record<string, string>>,
  cached: ReadonlySet<string>,
): string[] {
  if (cached.size === 0) return [];
  return [...usableOverrides(overrides).keys()].filter((source) => cached.has(source)).sort();
}

/**
 * `overrides` without the entries whose source (read as runtimes read it: `index.docker.io` is
 * `docker.io`) is in `leave`; the object itself where none is.
 */
export function overridesLeaving(
  overrides: Readonly<Record<string, string>>,
  leave: readonly string[],
): Readonly<Record<string, string>> {
  if (leave.length === 0) return overrides;
  const left = new Set(leave);
  return Object.fromEntries(
    Object.entries(overrides).filter(([source]) => !left.has(canonicalRegistry(source))),
  );
}
