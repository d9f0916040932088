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
  return sourcesOf(overrides).filter((source) => cached.has(source));
}

// The usable sources of each overrides object, sorted, read once (admission asks per request).
const sources = new WeakMap<object, readonly string[]>();

function sourcesOf(overrides: Readonly<Record<string, string>>): readonly string[] {
  let known = sources.get(overrides);
  if (known === undefined) {
    known = [...usableOverrides(overrides).keys()].sort();
    sources.set(overrides, known);
  }
  return known;
}

// Configs are replaced, never edited: one reduced copy per overrides object and set of hosts left,
// so the pipeline's rewriter cache (keyed by the overrides object) keeps working.
const reduced = new WeakMap<object, { readonly key: string; readonly overrides: Record<string, string> }>();

/**
 * `overrides` without the entries whose source (read as runtimes read it: `index.docker.io` is
 * `docker.io`) is in `leave`; the object itself where none is. The same object for the same
 * overrides and hosts, as long as those are the last asked for.
 */
export function overridesLeaving(
  overrides: Readonly<Record<string, string>>,
  leave: readonly string[],
): Readonly<Record<string, string>> {
  if (leave.length === 0) return overrides;
  const key = leave.join(' ');
  const known = reduced.get(overrides);
  if (known?.key === key) return known.overrides;
  const left = new Set(leave);
  const kept = Object.fromEntries(
    Object.entries(overrides).filter(([source]) => !left.has(canonicalRegistry(source))),
  );
  reduced.set(overrides, { key, overrides: kept });
  return kept;
}
