/**
 * One count of the escaped Pods (pure): the Pods judged by ./escape-decision.ts go in one at a
 * time as the pages of a list arrive, and only counts and the owners to repair stay, so a count's
 * memory grows with the owners (bounded), never with the Pods.
 */
import { ESCAPE_REASONS, type EscapeReason } from '../../api/escaped-pods.js';
import type { OwnerRef } from '../trust-restart/pod-facts.js';

/** The most owners one count keeps for the repair; the rest wait for the next count. */
export const MAX_REPAIR_OWNERS = 500;

/** An owner whose Pods escaped, as the repair reads it. */
export interface EscapedOwner {
  readonly namespace: string;
  readonly owner: OwnerRef;
  /** Its escaped Pods in this count. */
  pods: number;
}

/** What a count found. */
export interface EscapedCount {
  /** Escaped Pods, each once. */
  readonly pods: number;
  /** Per reason (a Pod under each of its reasons); reasons no Pod has are absent. */
  readonly reasons: Partial<Record<EscapeReason, number>>;
  /** Escaped Pods without a controlling owner: reported, never touched. */
  readonly bare: number;
  /** Running Pods looked at. */
  readonly scanned: number;
  /** Owners of escaped Pods (at most {@link MAX_REPAIR_OWNERS}), in the order first seen. */
  readonly owners: readonly EscapedOwner[];
  /** Owners left out by the bound. */
  readonly ownersLeftOut: number;
}

/** A count under way. */
export class EscapedTally {
  private pods = 0;
  private bare = 0;
  private scanned = 0;
  private ownersLeftOut = 0;
  private readonly reasons = new Map<EscapeReason, number>();
  private readonly owners = new Map<string, EscapedOwner>();

  /** A running Pod was judged: `reasons` empty means it follows the set. */
  add(pod: { namespace: string; owner: OwnerRef | undefined }, reasons: readonly EscapeReason[]): void {
    this.scanned++;
    if (reasons.length === 0) return;
    this.pods++;
    for (const r of reasons) this.reasons.set(r, (this.reasons.get(r) ?? 0) + 1);
    if (pod.owner === undefined) {
      this.bare++;
      return;
    }
    const key = `${pod.namespace}/${pod.owner.uid}`;
    const known = this.owners.get(key);
    if (known !== undefined) known.pods++;
    else if (this.owners.size < MAX_REPAIR_OWNERS)
      this.owners.set(key, { namespace: pod.namespace, owner: pod.owner, pods: 1 });
    else this.ownersLeftOut++;
  }

  /** Starts over (a list restarted on an expired continue token). */
  reset(): void {
    this.pods = 0;
    this.bare = 0;
    this.scanned = 0;
    this.ownersLeftOut = 0;
    this.reasons.clear();
    this.owners.clear();
  }

  /** The count so far. */
  result(): EscapedCount {
    const reasons: Partial<Record<EscapeReason, number>> = {};
    for (const r of ESCAPE_REASONS) {
      const n = this.reasons.get(r);
      if (n !== undefined) reasons[r] = n;
    }
    return {
      pods: this.pods,
      reasons,
      bare: this.bare,
      scanned: this.scanned,
      owners: [...this.owners.values()],
      ownersLeftOut: this.ownersLeftOut,
    };
  }
}
