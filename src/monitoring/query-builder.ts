import type { MetricCatalog } from './metric-catalog.js';
import type { MonitoringOptions } from './monitoring-options.js';
import { promQuery, type MetricRefs, type PromQuery } from './promql-query.js';

/** Builds checked queries with the selectors of `options`' scrape jobs. */
export type QueryBuilder = (build: (m: MetricRefs) => string) => PromQuery;

/** A {@link QueryBuilder} over `catalog`, selecting each process's series by its job. */
export function queryBuilder(catalog: MetricCatalog, o: MonitoringOptions): QueryBuilder {
  const selectors = { controller: `job="${o.controllerJob}"`, webhook: `job="${o.webhookJob}"` };
  return (build) => promQuery(catalog, selectors, build);
}
