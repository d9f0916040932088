/**
 * Pacing (pure): at most `concurrency` restarts under way; one ends when its completion was
 * observed or its deadline passed (then it is reported and the next goes on); nothing starts
 * before the delay after the bundle change has passed. No I/O, no clock of its own.
 */
import type { RestartTarget } from './restart-plan.js';

/** A restart under way: a workload rolling out, or a Pod being evicted. */
export interface Rollout {
  readonly key: string;
  readonly target: RestartTarget;
  /** The bundle it was started for. */
  readonly hash: string;
  readonly startedAtMs: number;
  readonly deadlineAtMs: number;
}

/** Input of {@link paceStep}. */
export interface PaceInput {
  readonly rolling: readonly Rollout[];
  /** Keys of rollouts observed complete since the last step. */
  readonly completed: ReadonlySet<string>;
  /** This pass's targets, in plan order. */
  readonly candidates: readonly RestartTarget[];
  /** Keys already dealt with for this bundle (opted out, or rolled out and left alone). */
  readonly settled: ReadonlySet<string>;
  readonly nowMs: number;
  /** No restart starts before this (the bundle change plus the delay). */
  readonly notBeforeMs: number;
  readonly concurrency: number;
}

/** What one step decides. */
export interface PaceStep {
  /** Rollouts that end now, and how. */
  readonly finished: readonly { readonly rollout: Rollout; readonly outcome: 'completed' | 'deadline' }[];
  /** Rollouts still under way. */
  readonly rolling: readonly Rollout[];
  /** How many more may start now. */
  readonly freeSlots: number;
  /** Targets that may start, in order (the caller takes up to {@link freeSlots} that need a restart). */
  readonly queue: readonly RestartTarget[];
}

/** One pacing step; see the file comment. */
export function paceStep(i: PaceInput): PaceStep {
  const finished: { rollout: Rollout; outcome: 'completed' | 'deadline' }[] = [];
  const rolling: Rollout[] = [];
  for (const r of i.rolling) {
    if (i.completed.has(r.key)) finished.push({ rollout: r, outcome: 'completed' });
    else if (i.nowMs >= r.deadlineAtMs) finished.push({ rollout: r, outcome: 'deadline' });
    else rolling.push(r);
  }
  const freeSlots = Math.max(0, i.concurrency - rolling.length);
  if (freeSlots === 0 || i.nowMs < i.notBeforeMs) return { finished, rolling, freeSlots, queue: [] };
  const busy = new Set(rolling.map((r) => r.key));
  // A rollout that just ended is not started again in the same step: its Pods may still show
  // stale until the cache catches up.
  for (const f of finished) busy.add(f.rollout.key);
  const queue = i.candidates.filter((t) => !busy.has(t.key) && !i.settled.has(t.key));
  return { finished, rolling, freeSlots, queue };
}
