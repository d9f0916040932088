/**
 * The pure core of sharding over Leases. Each replica holds a Lease of its own; a key belongs to
 * the rendezvous owner among the live holders. Views of who is live differ between replicas for
 * a moment (a watch arrives later here than there), so ownership is not taken on a replica's own
 * view alone: every replica publishes on its Lease the member set it works by (its *view*), and
 * a key is worked only when this replica owns it under its published view and no other live
 * member's published view still gives that member the key. A replica publishes a view only after
 * it stopped working the keys that view takes from it, so a published claim is a promise: "I
 * work nothing outside my share of this view". A dead member (Lease expired or released) works
 * nothing: its elector stopped its work before the Lease could expire for anyone else.
 */
import { leaseExpiresAtMs, type LeaseRecord } from './lease-decision.js';
import { hash53, rendezvousOwner } from './rendezvous-hash.js';
import { trimChar, trimEndChar } from '../text/trim-char.js';

/** Annotation on a shard Lease: the view its holder works by (JSON of {@link ShardView}). */
export const SHARD_VIEW_ANNOTATION = 'rt-bootstrapper.kyma-project.io/shard-view';

/** A member set a replica works by; `generation` grows with every view one holder publishes. */
export interface ShardView {
  readonly generation: number;
  /** Holder identities, sorted, including the publisher. */
  readonly members: readonly string[];
}

/** The annotation's value for `view`. */
export function encodeShardView(view: ShardView): string {
  return JSON.stringify({ generation: view.generation, members: view.members });
}

/** The view in an annotation; undefined when absent or unreadable (a claim of nothing). */
export function parseShardView(text: string | undefined): ShardView | undefined {
  if (text === undefined) return undefined;
  try {
    const v = JSON.parse(text) as { generation?: unknown; members?: unknown };
    if (typeof v.generation !== 'number' || !Array.isArray(v.members)) return undefined;
    const members = v.members.filter((m): m is string => typeof m === 'string');
    return { generation: v.generation, members: [...members].sort() };
  } catch {
    return undefined;
  }
}

/** What a replica knows of one shard Lease. */
export interface MemberObservation {
  readonly record: LeaseRecord;
  /** Local monotonic ms when this resourceVersion of the Lease was first observed. */
  readonly observedAtMs: number;
  readonly view: ShardView | undefined;
}

/**
 * The live holders among `observations` (by this observer's clock), each with its published
 * view; `self` is left out (its own liveness is its elector's to tell).
 */
export function liveMembers(
  observations: Iterable<MemberObservation>,
  self: string,
  nowMs: number,
  defaultLeaseDurationMs: number,
): Map<string, ShardView | undefined> {
  const live = new Map<string, ShardView | undefined>();
  for (const o of observations) {
    const holder = o.record.holderIdentity;
    if (holder === self) continue;
    const expiresAt = leaseExpiresAtMs(o.record, o.observedAtMs, defaultLeaseDurationMs);
    if (expiresAt !== undefined && nowMs < expiresAt) live.set(holder, o.view);
  }
  return live;
}

/** The earliest time one of `observations` expires (for a timer); undefined if none can. */
export function nextExpiryMs(
  observations: Iterable<MemberObservation>,
  self: string,
  nowMs: number,
  defaultLeaseDurationMs: number,
): number | undefined {
  let next: number | undefined;
  for (const o of observations) {
    if (o.record.holderIdentity === self) continue;
    const at = leaseExpiresAtMs(o.record, o.observedAtMs, defaultLeaseDurationMs);
    if (at !== undefined && at > nowMs && (next === undefined || at < next)) next = at;
  }
  return next;
}

/** The view a replica should work by: itself and every live member, sorted. */
export function targetMembers(self: string, live: Iterable<string>): string[] {
  return [...new Set([self, ...live])].sort();
}

/** Whether two member lists name the same members (both sorted). */
export function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((m, i) => m === b[i]);
}

/** What a replica may do with one key. */
export type ShardDecision =
  /** Ours, and nobody else claims it: work it. */
  | { readonly kind: 'work' }
  /** Ours by our view, but a live member's published view still gives it that member. */
  | { readonly kind: 'wait'; readonly claimant: string }
  /** Another member's by our view. */
  | { readonly kind: 'elsewhere'; readonly owner: string }
  /** We work nothing now (no confirmed view: starting, or our Lease is not fresh). */
  | { readonly kind: 'inactive' };

/** What {@link decideShard} reads: this replica's state and the others' published views. */
export interface ShardState {
  readonly self: string;
  /** The view we published and saw come back, while our Lease is fresh; undefined otherwise. */
  readonly view: ShardView | undefined;
  /** A view we are moving to (its keys leaving us are no longer started); undefined when settled. */
  readonly next?: ShardView | undefined;
  /** Live members other than us, with their published views. */
  readonly others: ReadonlyMap<string, ShardView | undefined>;
}

/** The decision for `key` (pure). */
export function decideShard(key: string, s: ShardState): ShardDecision {
  if (s.view === undefined) return { kind: 'inactive' };
  const owner = rendezvousOwner(key, s.view.members);
  if (owner !== s.self) return { kind: 'elsewhere', owner: owner ?? '' };
  if (s.next !== undefined) {
    const nextOwner = rendezvousOwner(key, s.next.members);
    if (nextOwner !== s.self) return { kind: 'elsewhere', owner: nextOwner ?? '' };
  }
  for (const [member, view] of s.others) {
    if (view !== undefined && rendezvousOwner(key, view.members) === member)
      return { kind: 'wait', claimant: member };
  }
  return { kind: 'work' };
}

/**
 * The name of a replica's shard Lease: `prefix` and the identity made a valid object name
 * (lower case, `[a-z0-9-]`, at most 40 characters of it) plus a hash of the whole identity, so
 * two identities that read alike still get Leases of their own.
 */
export function shardLeaseName(prefix: string, identity: string): string {
  const dashed = identity.toLowerCase().replace(/[^a-z0-9-]+/g, '-');
  const readable = trimEndChar(trimChar(dashed, '-').slice(0, 40), '-');
  const tag = hash53(identity).toString(36);
  return `${prefix}${readable === '' ? '' : `${readable}-`}${tag}`;
}
