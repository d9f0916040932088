// Differences of Prometheus counters and histograms between two scrapes of the controller child.
import { metricValue } from './cpu-groups.js';

/** One histogram's observations between two scrapes. */
export interface HistogramDelta {
  readonly count: number;
  readonly sumSeconds: number;
  /** Cumulative counts by upper bound (seconds), ascending; +Inf last. */
  readonly buckets: readonly { readonly le: number; readonly count: number }[];
}

/** The observations of histogram `name` between the scrapes `before` and `after`. */
export function histogramDelta(before: string, after: string, name: string): HistogramDelta {
  const bounds = new Set<string>();
  const pattern = new RegExp(`^${name}_bucket\\{[^}]*le="([^"]+)"`, 'gm');
  for (const m of after.matchAll(pattern)) if (m[1] !== undefined) bounds.add(m[1]);
  const buckets = [...bounds]
    .map((le) => ({
      le: le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le),
      count: metricValue(after, `${name}_bucket`, { le }) - metricValue(before, `${name}_bucket`, { le }),
    }))
    .sort((a, b) => a.le - b.le);
  return {
    count: metricValue(after, `${name}_count`) - metricValue(before, `${name}_count`),
    sumSeconds: metricValue(after, `${name}_sum`) - metricValue(before, `${name}_sum`),
    buckets,
  };
}

/** The upper bound (seconds) of the bucket holding quantile `q`: "p99 ≤ this". NaN without observations. */
export function quantileUpperBound(h: HistogramDelta, q: number): number {
  if (h.count === 0) return Number.NaN;
  const wanted = q * h.count;
  return h.buckets.find((b) => b.count >= wanted)?.le ?? Number.POSITIVE_INFINITY;
}

/** `counter(after) - counter(before)`. */
export function counterDelta(
  before: string,
  after: string,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number {
  return metricValue(after, name, labels) - metricValue(before, name, labels);
}

/** Per-key differences of two count maps, without the zeros. */
export function countsDelta(
  before: Readonly<Record<string, number>>,
  after: Readonly<Record<string, number>>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
      .filter(([, v]) => v > 0),
  );
}
