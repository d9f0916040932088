/**
 * Pacing (pure): at most `concurrency` restarts hold a slot at once; a slot is let go when its
 * restart completed or its deadline passed (then it is reported and the next goes on); nothing
 * starts before the delay after the bundle change has passed. No I/O, no clock of its own: the
 * work queue (../kube/work-queue.ts) runs what these decisions name, when they say.
 */
import type { RestartTarget } from './restart-plan.js';

/** A restart holding a slot: admitted, then started (a workload rolling out, a Pod being evicted). */
export interface Slot {
  readonly key: string;
  readonly target: RestartTarget;
  /** UIDs of the target's stale Pods when it was admitted. */
  readonly staleUids: ReadonlySet<string>;
  /** Set once the restart was started (a patch, an eviction, or a rollout found under way). */
  startedAtMs?: number;
  /** The bundle it was started for. */
  hash?: string;
  /** An eviction that went through: only its Pod's end is waited for. */
  evicted?: boolean;
}

/** Input of {@link admit}. */
export interface AdmitInput {
  /** Keys holding a slot. */
  readonly holding: ReadonlySet<string>;
  /** This plan's targets, in plan order. */
  readonly candidates: readonly RestartTarget[];
  /** Whether a key is left alone now (settled for this bundle, or waiting for the cache). */
  readonly resting: (key: string) => boolean;
  readonly nowMs: number;
  /** No restart starts before this (the bundle change plus the delay). */
  readonly notBeforeMs: number;
  readonly concurrency: number;
}

/** The targets that take the free slots now, in plan order. */
export function admit(i: AdmitInput): RestartTarget[] {
  const free = Math.max(0, i.concurrency - i.holding.size);
  if (free === 0 || i.nowMs < i.notBeforeMs) return [];
  const out: RestartTarget[] = [];
  for (const t of i.candidates) {
    if (out.length === free) break;
    if (!i.holding.has(t.key) && !i.resting(t.key)) out.push(t);
  }
  return out;
}

/** How a started restart stands: still under way, or over and how. */
export type SlotState = 'under-way' | 'completed' | 'deadline';

/** Whether a started slot ends now: `complete` is what was observed of its restart. */
export function slotState(slot: Slot, complete: boolean, nowMs: number, deadlineMs: number): SlotState {
  if (complete) return 'completed';
  if (slot.startedAtMs !== undefined && nowMs >= slot.startedAtMs + deadlineMs) return 'deadline';
  return 'under-way';
}

/** How long until a started slot's deadline, at most `pollMs` (when to look at it again). */
export function nextLookMs(slot: Slot, nowMs: number, deadlineMs: number, pollMs: number): number {
  const left = (slot.startedAtMs ?? nowMs) + deadlineMs - nowMs;
  return Math.max(1, Math.min(pollMs, left));
}

/**
 * When the next plan is due at the latest: the end of the delay (`notBeforeMs`, 0 when nothing
 * waits for it) or of the first rest that ends (`restUntil`, epoch ms); undefined: none.
 */
export function replanAfter(
  notBeforeMs: number,
  restUntil: Iterable<number>,
  nowMs: number,
): { replanAfterMs?: number } {
  let at = nowMs < notBeforeMs ? notBeforeMs : Number.POSITIVE_INFINITY;
  for (const until of restUntil) at = Math.min(at, until);
  return Number.isFinite(at) ? { replanAfterMs: Math.max(1, at - nowMs) } : {};
}
