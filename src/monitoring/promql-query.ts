/**
 * PromQL expressions whose metric references are checked against what is served: every name
 * goes through {@link MetricRefs}, which knows the families of each process (./metric-catalog.ts)
 * and of the kube-apiserver and Prometheus (./external-metrics.ts), adds the process's selector
 * (its scrape job) and records the families an expression reads.
 */
import type { MetricCatalog, MetricFamily } from './metric-catalog.js';
import type { MonitoringOptions } from './monitoring-options.js';
import { APISERVER_FAMILIES, PROMETHEUS_FAMILIES } from './external-metrics.js';

/** A dashboard query or alert expression refers to a family or label that is not served. */
export class MonitoringDefinitionError extends Error {
  override readonly name = 'MonitoringDefinitionError';
}

/** One PromQL expression and the metric names (series names, with histogram suffixes) it reads. */
export interface PromQuery {
  readonly expr: string;
  readonly metrics: readonly string[];
}

/** Where a referenced family is served. */
export type FamilySource = 'controller' | 'webhook' | 'apiserver' | 'prometheus';

/** Label selectors of each process's series (their scrape jobs). */
export interface ProcessSelectors {
  /** e.g. `job="rt-bootstrapper-controller-metrics"`. */
  readonly controller: string;
  readonly webhook: string;
}

/** Builds series selectors, checked; see the file comment. */
export interface MetricRefs {
  /**
   * `name{<the process's selector>,<matchers>}` for a family `source` serves. `name` may carry a
   * histogram's `_bucket`, `_sum` or `_count`; the labels that `matchers` names must exist.
   */
  sel(source: FamilySource, name: string, matchers?: string): string;
}

const HISTOGRAM_SUFFIXES = ['_bucket', '_sum', '_count'] as const;
/** Labels Prometheus gives every series of a target. */
const TARGET_LABELS = ['job', 'instance'] as const;
// `\b`: a label name starts only at the start of a word, so no scan restarts inside a name.
const MATCHER = /\b([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"/g;

function familyOf(
  families: ReadonlyMap<string, MetricFamily>,
  name: string,
): { family: MetricFamily; suffix: string } | undefined {
  const direct = families.get(name);
  if (direct) return { family: direct, suffix: '' };
  for (const suffix of HISTOGRAM_SUFFIXES) {
    if (!name.endsWith(suffix)) continue;
    const base = families.get(name.slice(0, -suffix.length));
    if (base?.type === 'histogram') return { family: base, suffix };
  }
  return undefined;
}

/**
 * Builds one expression with checked references: `build` gets {@link MetricRefs} and returns
 * the text. Throws {@link MonitoringDefinitionError} naming what is not served.
 */
export function promQuery(
  catalog: MetricCatalog,
  selectors: ProcessSelectors,
  build: (m: MetricRefs) => string,
): PromQuery {
  const metrics = new Set<string>();
  const refs: MetricRefs = {
    sel(source, name, matchers = '') {
      const families =
        source === 'apiserver'
          ? APISERVER_FAMILIES
          : source === 'prometheus'
            ? PROMETHEUS_FAMILIES
            : catalog[source];
      const found = familyOf(families, name);
      if (!found) throw new MonitoringDefinitionError(`${name}: no such metric is served by the ${source}`);
      const labels = new Set([
        ...found.family.labelNames,
        ...TARGET_LABELS,
        ...(found.suffix === '_bucket' ? ['le'] : []),
      ]);
      for (const [, label] of matchers.matchAll(MATCHER))
        if (label !== undefined && !labels.has(label))
          throw new MonitoringDefinitionError(`${name}: the ${source} serves no label ${label}`);
      metrics.add(name);
      const own = source === 'controller' || source === 'webhook' ? selectors[source] : '';
      const all = [own, matchers].filter((s) => s !== '').join(',');
      return all === '' ? name : `${name}{${all}}`;
    },
  };
  const expr = build(refs);
  return { expr, metrics: [...metrics] };
}

/** Builds checked queries with the selectors of `options`' scrape jobs. */
export type QueryBuilder = (build: (m: MetricRefs) => string) => PromQuery;

/** A {@link QueryBuilder} over `catalog`, selecting each process's series by its job. */
export function queryBuilder(catalog: MetricCatalog, o: MonitoringOptions): QueryBuilder {
  const selectors = { controller: `job="${o.controllerJob}"`, webhook: `job="${o.webhookJob}"` };
  return (build) => promQuery(catalog, selectors, build);
}
