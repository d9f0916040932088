/**
 * What the Pod manipulations share: the builder they edit through, the container lists they
 * visit, and the shape of their result.
 */
import type { PatchBuilder } from './patch-builder.js';
import type { Container, EphemeralContainer, Pod } from './pod.js';

/** The builder every manipulation edits the Pod through. */
export type PodPatchBuilder = PatchBuilder<Pod>;

/** The three container lists of a Pod spec. */
export type ContainerKind = 'containers' | 'initContainers' | 'ephemeralContainers';

/** Every container list; the images of all of them are rewritten. */
export const ALL_CONTAINER_KINDS: readonly ContainerKind[] = [
  'containers',
  'initContainers',
  'ephemeralContainers',
];

/**
 * The lists env and mounts are added to. Ephemeral containers are left out: they only arrive
 * through the `pods/ephemeralcontainers` subresource, where nothing but their images may change.
 */
export const REGULAR_CONTAINER_KINDS: readonly ContainerKind[] = ['containers', 'initContainers'];

/** What one manipulation did. */
export interface ManipulationResult {
  /** Whether the Pod was edited. */
  readonly changed: boolean;
  /** Why something that was asked for was not done, for the caller to log and count. */
  readonly warnings: readonly string[];
}

/** A container of any kind (the fields the manipulations touch are common to all). */
export type AnyContainer = Container | EphemeralContainer;

/** The containers of one list; an absent or malformed list is empty. */
export function containersOf(pod: Pod, kind: ContainerKind): readonly AnyContainer[] {
  const list: unknown = pod.spec?.[kind];
  return Array.isArray(list) ? (list as AnyContainer[]) : [];
}

/** Names a container in messages, e.g. `initContainers[0] "setup"`. */
export function containerLabel(kind: ContainerKind, index: number, container: AnyContainer): string {
  return `${kind}[${index}] ${JSON.stringify(container.name)}`;
}
