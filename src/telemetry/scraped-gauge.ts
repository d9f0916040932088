import { Gauge, type Registry } from 'prom-client';
import type { MetricSpec } from './prom-metrics.js';

/**
 * A gauge whose samples are computed when it is scraped: `fill` sets them on a cleared gauge,
 * so a label value that is gone (a state no runtime has, a runtime deleted) disappears with it,
 * and a value not known now is absent rather than 0.
 */
export function scrapedGauge<L extends string>(
  registry: Registry,
  spec: MetricSpec<L>,
  fill: (gauge: Gauge<L>) => void,
): Gauge<L> {
  return new Gauge<L>({
    name: spec.name,
    help: spec.help,
    labelNames: [...spec.labelNames],
    registers: [registry],
    collect() {
      this.reset();
      // prom-client gives a gauge without labels a 0 on reset: for a timestamp that reads as
      // "expired in 1970", so nothing is exported until `fill` sets a value.
      if (spec.labelNames.length === 0) this.remove();
      fill(this);
    },
  });
}

/**
 * What a process's scraped gauges read, attached per registry: a mode started again on the same
 * registry (a new leadership term) attaches its own source, and a stopped one detaches, so the
 * gauges are registered once and never read a stopped mode.
 */
export class ScrapeSlot<S> {
  private static readonly slots = new WeakMap<Registry, Map<string, ScrapeSlot<unknown>>>();
  private source: S | undefined;

  private constructor() {}

  /**
   * The slot `name` of `registry`; `register` runs once per registry and name (the gauges, which
   * read {@link current}).
   */
  static of<S>(registry: Registry, name: string, register: (slot: ScrapeSlot<S>) => void): ScrapeSlot<S> {
    let byName = ScrapeSlot.slots.get(registry);
    if (!byName) {
      byName = new Map();
      ScrapeSlot.slots.set(registry, byName);
    }
    const known = byName.get(name) as ScrapeSlot<S> | undefined;
    if (known) return known;
    const slot = new ScrapeSlot<S>();
    byName.set(name, slot);
    register(slot);
    return slot;
  }

  /** The source attached now, if any. */
  current(): S | undefined {
    return this.source;
  }

  /** Attaches `source`; the returned function detaches it (if it is still the one attached). */
  attach(source: S): () => void {
    this.source = source;
    return () => {
      if (this.source === source) this.source = undefined;
    };
  }
}
