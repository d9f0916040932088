/** One step of the local landscape's start, in ms after this process started. */
export interface Phase {
  readonly name: string;
  /** When the step ended. */
  readonly endMs: number;
  /** When it began, when not where the step before it ended (a part of an earlier step). */
  readonly startMs?: number;
  /** A part of the step above it, shown indented. */
  readonly detail?: boolean;
}

/**
 * Records when each step of the local landscape's start ended, against a clock that reads ms
 * since this process started (by default `process.uptime()`), so that the figure printed for the
 * first mutated Pod is the summary's step at which it ran.
 */
export class PhaseClock {
  private readonly list: Phase[] = [];

  constructor(readonly now: () => number = () => process.uptime() * 1000) {}

  /** The step that ends now; returns when (ms after this process started). */
  mark(name: string): number {
    const endMs = this.now();
    this.list.push({ name, endMs });
    return endMs;
  }

  /** A part of the last step, measured elsewhere (e.g. from a Pod's status); ignored when unknown. */
  detail(name: string, startMs: number | undefined, endMs: number | undefined): void {
    if (startMs === undefined || endMs === undefined) return;
    this.list.push({ name, startMs, endMs, detail: true });
  }

  get phases(): readonly Phase[] {
    return this.list;
  }
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/**
 * The lines of "where the time went": each step with how long it took and when it ended; a
 * step's details below it, indented, with their own span. Pure.
 */
export function phaseLines(phases: readonly Phase[]): string[] {
  const rows: [string, string, string][] = [['step', 'took', 'done at']];
  let previousEnd = 0;
  for (const p of phases) {
    if (p.detail) {
      rows.push([`  ${p.name}`, seconds(p.endMs - (p.startMs ?? previousEnd)), seconds(p.endMs)]);
      continue;
    }
    rows.push([p.name, seconds(p.endMs - (p.startMs ?? previousEnd)), seconds(p.endMs)]);
    previousEnd = p.endMs;
  }
  const width = (i: 0 | 1 | 2): number => Math.max(...rows.map((r) => r[i].length));
  return rows.map(([name, took, at]) =>
    `${name.padEnd(width(0))}  ${took.padStart(width(1))}  ${at.padStart(width(2))}`.trimEnd(),
  );
}
