/**
 * The most containers a Pod may have for the webhook to mutate it. Kubernetes sets no limit,
 * but etcd does (its 1.5 MiB value limit holds tens of thousands of plain containers), and
 * mutating costs memory and answer bytes per container (docs/webhook-hardening.md). Real Pods
 * have a few, rarely dozens; a Pod over the limit is not mutated (a failure: admitted unchanged with a
 * warning, or refused when failing closed), which lets no one past anything they could not pass
 * anyway, since a Pod's own annotations opt it out of every feature.
 */
export const MAX_CONTAINERS = 1000;

/** The Pod has more containers than the webhook mutates. */
export class PodTooLargeError extends Error {
  override readonly name = 'PodTooLargeError';
}

/** Throws {@link PodTooLargeError} when the Pod's container lists together exceed {@link MAX_CONTAINERS}. */
export function assertMutableSize(pod: { readonly spec?: unknown }): void {
  const spec: unknown = pod.spec;
  if (typeof spec !== 'object' || spec === null) return;
  const lists = spec as Record<string, unknown>;
  let count = 0;
  for (const kind of ['containers', 'initContainers', 'ephemeralContainers']) {
    const list = lists[kind];
    if (Array.isArray(list)) count += list.length;
  }
  if (count > MAX_CONTAINERS)
    throw new PodTooLargeError(
      `the Pod has ${count} containers, more than the ${MAX_CONTAINERS} the webhook mutates`,
    );
}
