// The order and the concurrency of scripts/run-tests.mjs: every test run (a file, the unit files
// together, a matrix file on one minor) is a job of one of two lanes that run side by side, the
// main lane (static, unit, integration, the matrix) and the end-to-end lane (a real node each).

/**
 * The line that starts a test file before the others of its lane, and lets it run beside another
 * end-to-end file: it spends most of its time waiting for something no CPU makes faster (the
 * kubelet's 5-minute ClusterTrustBundle cache).
 */
export const EARLY_MARKER = '// test-schedule: early';

/**
 * The line that keeps a test file from running beside another CPU-bound job (the unit files, or
 * another so marked): it keeps the machine's cores busy by itself, and two such jobs side by side
 * take longer than one after the other while the rest of the lane waits behind them.
 */
export const CPU_MARKER = '// test-schedule: cpu';

/** Which side of the run a job belongs to. */
export type Lane = 'main' | 'e2e';

/** One run of node's test runner. */
export interface TestJob {
  /** What it is remembered by (its durations): the file, or the file and its minor. */
  readonly id: string;
  /** The summary line it counts in. */
  readonly phase: string;
  readonly lane: Lane;
  readonly files: readonly string[];
  /** Marked with EARLY_MARKER. */
  readonly early: boolean;
  /** Marked with CPU_MARKER (or the unit files' job): never beside another such job. */
  readonly cpuBound: boolean;
  readonly env: Readonly<Record<string, string>>;
}

/** How many jobs of each lane run at once. */
export interface LaneWidths {
  readonly main: number;
  /** End-to-end jobs at once, of which at most one unmarked (a node busy with more than waiting). */
  readonly e2e: number;
}

/** Whether a test file's text holds `marker` (EARLY_MARKER, CPU_MARKER) as a line of its own. */
export function hasMarker(source: string, marker: string): boolean {
  return source.split('\n').some((line) => line.trim() === marker);
}

/**
 * The jobs in the order they start: marked ones first, then the longest of the last run first (so
 * no long file starts last and runs alone), jobs never timed before the timed ones in their given
 * order.
 */
export function orderJobs(
  jobs: readonly TestJob[],
  durations: Readonly<Record<string, number>>,
): readonly TestJob[] {
  const rank = (job: TestJob): number => durations[job.id] ?? Number.POSITIVE_INFINITY;
  return jobs
    .map((job, index) => ({ job, index }))
    .sort(
      (a, b) =>
        Number(b.job.early) - Number(a.job.early) ||
        (rank(b.job) === rank(a.job) ? 0 : rank(b.job) > rank(a.job) ? 1 : -1) ||
        a.index - b.index,
    )
    .map(({ job }) => job);
}

/**
 * The first waiting job that may start beside the running ones, if any: one `ready` lets start (what
 * it needs is built), a lane runs up to its width (the main lane one fewer while a node is at work
 * beside a CPU-bound job), an unmarked end-to-end job only while no other unmarked one runs and the
 * main lane is within that width, and a CPU-bound job only while no other one runs.
 */
export function nextJob(
  waiting: readonly TestJob[],
  running: readonly TestJob[],
  widths: LaneWidths,
  ready: (job: TestJob) => boolean = () => true,
): TestJob | undefined {
  const count = (p: (job: TestJob) => boolean): number => running.filter(p).length;
  // A node at work and a CPU-bound job together take one of the main lane's places, so the node
  // keeps about the share of the machine it had when the end-to-end files ran after the others;
  // beside the other main jobs (mostly waiting on API servers) it needs none.
  const nodeAtWork = count((r) => r.lane === 'e2e' && !r.early) > 0;
  const cpuAtWork = count((r) => r.cpuBound) > 0;
  const mainWidth = (node: boolean, cpu: boolean): number => Math.max(1, widths.main - (node && cpu ? 1 : 0));
  const mainCount = count((r) => r.lane === 'main');
  return waiting.find((job) => {
    if (!ready(job)) return false;
    if (job.cpuBound && cpuAtWork) return false;
    if (job.lane === 'main') return mainCount < mainWidth(nodeAtWork, job.cpuBound || cpuAtWork);
    if (count((r) => r.lane === 'e2e') >= widths.e2e) return false;
    if (job.early) return true;
    // A node: alone among the unmarked, and only where the main lane keeps the width it then has.
    return !nodeAtWork && mainCount <= mainWidth(true, cpuAtWork);
  });
}
