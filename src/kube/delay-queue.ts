/**
 * Keys waiting for a deadline, as client-go's delaying queue: one timer for the
 * earliest deadline (not one per key), so thousands of requeued keys cost one
 * timer, and each key waits at most once (the earlier deadline wins).
 */
import { systemClock, type Clock } from './backoff.js';

interface Entry<K> {
  readonly key: K;
  readonly at: number;
}

// setTimeout overflows above 2^31-1 ms and fires at once; longer waits re-arm.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Options of a {@link DelayQueue}. */
export interface DelayQueueOptions {
  readonly clock?: Clock;
  /** Unref the timer so pending deadlines alone do not keep the process alive (default false). */
  readonly unref?: boolean;
}

/** A set of keys, each released to `onReady` once its deadline has passed. */
export class DelayQueue<K> {
  // Min-heap by deadline with lazy deletion: an entry is live only while
  // `deadlines.get(key) === entry.at`, so cancel and reschedule are O(log n) at most.
  private readonly heap: Entry<K>[] = [];
  private readonly deadlines = new Map<K, number>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private readonly clock: Clock;

  constructor(
    private readonly onReady: (key: K) => void,
    private readonly opts: DelayQueueOptions = {},
  ) {
    this.clock = opts.clock ?? systemClock;
  }

  /** Number of keys waiting. */
  get size(): number {
    return this.deadlines.size;
  }

  /** Whether `key` is waiting. */
  has(key: K): boolean {
    return this.deadlines.has(key);
  }

  /**
   * Release `key` after `delayMs`, unless it already waits for an earlier deadline; true when this
   * deadline is the one that stands.
   */
  schedule(key: K, delayMs: number): boolean {
    const at = this.clock.now() + Math.max(0, delayMs);
    const current = this.deadlines.get(key);
    if (current !== undefined && current <= at) return false;
    this.deadlines.set(key, at);
    this.push({ key, at });
    this.arm();
    return true;
  }

  /** Drop `key` if it is waiting. */
  cancel(key: K): void {
    this.deadlines.delete(key);
    // The heap entry goes stale and is skipped; the timer may fire once for nothing.
  }

  /** Drop every key and the timer. */
  clear(): void {
    this.deadlines.clear();
    this.heap.length = 0;
    this.disarm();
  }

  private arm(): void {
    this.dropStale();
    const head = this.heap[0];
    if (head === undefined) {
      this.disarm();
      return;
    }
    if (this.timer !== undefined && this.timerAt <= head.at) return;
    this.disarm();
    const wait = Math.min(MAX_TIMER_MS, Math.max(1, Math.ceil(head.at - this.clock.now())));
    this.timerAt = head.at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.fire();
    }, wait);
    if (this.opts.unref === true) this.timer.unref();
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  private fire(): void {
    const now = this.clock.now();
    const due: K[] = [];
    for (;;) {
      this.dropStale();
      const head = this.heap[0];
      if (head === undefined || head.at > now) break;
      this.pop();
      this.deadlines.delete(head.key);
      due.push(head.key);
    }
    // Release after the heap is consistent, so onReady may schedule again.
    for (const key of due) this.onReady(key);
    this.arm();
  }

  private dropStale(): void {
    for (;;) {
      const head = this.heap[0];
      if (head === undefined || this.deadlines.get(head.key) === head.at) return;
      this.pop();
    }
  }

  private push(entry: Entry<K>): void {
    const h = this.heap;
    h.push(entry);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = h[parent];
      if (p === undefined || p.at <= entry.at) break;
      h[i] = p;
      i = parent;
    }
    h[i] = entry;
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop();
    if (last === undefined || h.length === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let smallest = i;
      let smallestAt = last.at;
      const le = h[l];
      const re = h[r];
      if (le !== undefined && le.at < smallestAt) {
        smallest = l;
        smallestAt = le.at;
      }
      if (re !== undefined && re.at < smallestAt) smallest = r;
      if (smallest === i) break;
      const child = h[smallest];
      if (child === undefined) break;
      h[i] = child;
      i = smallest;
    }
    h[i] = last;
  }
}
