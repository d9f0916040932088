/**
 * Idempotent prom-client registration: the same metric family is shared by every
 * queue or controller of a process, so asking twice for it on one registry returns
 * the existing collector instead of throwing "already registered".
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** A metric name is taken on the registry by a collector of another type. */
export class MetricsRegistrationError extends Error {
  override readonly name = 'MetricsRegistrationError';
}

/** Definition of one metric family. */
export interface MetricSpec<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
}

function conflict(registry: Registry, name: string, kind: string): MetricsRegistrationError | undefined {
  const existing = registry.getSingleMetric(name);
  if (existing === undefined) return undefined;
  return new MetricsRegistrationError(`metric ${name} is already registered, but not as a ${kind}`);
}

/** The counter `spec.name` on `registry`, created on first use. */
export function counterOn<L extends string>(registry: Registry, spec: MetricSpec<L>): Counter<L> {
  const existing = registry.getSingleMetric(spec.name);
  if (existing instanceof Counter) return existing;
  const err = conflict(registry, spec.name, 'counter');
  if (err) throw err;
  return new Counter<L>({ ...spec, registers: [registry] });
}

/** The gauge `spec.name` on `registry`, created on first use. */
export function gaugeOn<L extends string>(registry: Registry, spec: MetricSpec<L>): Gauge<L> {
  const existing = registry.getSingleMetric(spec.name);
  if (existing instanceof Gauge) return existing;
  const err = conflict(registry, spec.name, 'gauge');
  if (err) throw err;
  return new Gauge<L>({ ...spec, registers: [registry] });
}

/** The histogram `spec.name` on `registry`, created on first use. */
export function histogramOn<L extends string>(
  registry: Registry,
  spec: MetricSpec<L> & { readonly buckets: readonly number[] },
): Histogram<L> {
  const existing = registry.getSingleMetric(spec.name);
  if (existing instanceof Histogram) return existing;
  const err = conflict(registry, spec.name, 'histogram');
  if (err) throw err;
  return new Histogram<L>({ ...spec, buckets: [...spec.buckets], registers: [registry] });
}
