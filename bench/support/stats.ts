/** Latency figures of one series, in milliseconds. */
export interface LatencySummary {
  readonly count: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p95: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

/** Nearest-rank percentile of an ascending array (p in 0..100). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

/** Summarises samples (milliseconds); the input is not modified. */
export function summarize(samples: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    mean: sorted.length > 0 ? sum / sorted.length : Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    p999: percentile(sorted, 99.9),
    max: sorted.length > 0 ? (sorted[sorted.length - 1] ?? Number.NaN) : Number.NaN,
  };
}

/** Median of a few numbers. */
export function median(values: readonly number[]): number {
  return percentile(Float64Array.from(values).sort(), 50);
}

/** Milliseconds with three decimals. */
export function ms(value: number): string {
  return `${value.toFixed(3)} ms`;
}

/** `p50 0.412 ms, p90 …, p99 …` */
export function describeLatency(
  s: LatencySummary,
  keys: readonly (keyof LatencySummary)[] = ['p50', 'p99'],
): string {
  return keys.map((k) => `${k} ${k === 'count' ? String(s[k]) : ms(s[k])}`).join(', ');
}

/** Megabytes (10^6 bytes) from the kB (KiB) of /proc, one decimal. */
export function mb(kib: number): string {
  return `${((kib * 1024) / 1e6).toFixed(1)} MB`;
}

/** `met` / `MISSED` for a target. */
export function verdict(ok: boolean): string {
  return ok ? 'met' : 'MISSED';
}
