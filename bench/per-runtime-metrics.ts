// Issue 28: what the opt-in per-runtime metrics (`--per-runtime-metrics`) cost at N runtimes.
//
// Pure: the controller's fleet metrics (src/controller/expiry/fleet-expiry.ts) on a registry of
// their own, fed N runtimes as direct mode holds them (states as a large fleet has them: most
// Ready, some Installing, Error, Paused; a drift client certificate each, notAfter spread over 90
// days). For N and for the aggregates alone (opt-in off) and with the opt-in, it prints the series
// a scrape exports (sample lines of the exposition: what Prometheus stores), the exposition's
// size, and the time to render a scrape (median of BENCH_SCRAPES). Asserts nothing.
//
//   npx tsx bench/per-runtime-metrics.ts     BENCH_RUNTIMES=500,5000 BENCH_SCRAPES=20
import { performance } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import type { BootstrapperState } from '../src/api/runtime-bootstrapper.js';
import { attachFleetExpiryMetrics, type FleetRuntime } from '../src/controller/expiry/fleet-expiry.js';
import { envIntegers, envNumber, isMain, say } from './support/env.js';

/** One row of the report. */
export interface CardinalityFigures {
  readonly runtimes: number;
  readonly perRuntime: boolean;
  /** Sample lines by family. */
  readonly series: ReadonlyMap<string, number>;
  readonly totalSeries: number;
  readonly bytes: number;
  readonly scrapeMs: number;
}

const DAY_MS = 86_400_000;

/** N runtimes: 97 % Ready, 1 % each Installing, Error and Paused; certificates 1–90 days from now. */
export function fleet(n: number, now: number): FleetRuntime[] {
  const stateOf = (i: number): BootstrapperState => {
    const r = i % 100;
    return r === 97 ? 'Installing' : r === 98 ? 'Error' : r === 99 ? 'Paused' : 'Ready';
  };
  return Array.from({ length: n }, (_, i) => ({
    key: `kcp-system/runtime-${i}`,
    runtimeId: `5a0c6f3e-${String(i).padStart(4, '0')}-4b1e-9c2d-${String(i * 7919).padStart(12, '0')}`,
    state: stateOf(i),
    driftNotAfter: now + (1 + (i % 90)) * DAY_MS,
    admissionPath: i % 2 === 0 ? ('policy' as const) : ('webhook' as const),
  }));
}

/** Renders scrapes of the fleet metrics for `n` runtimes and counts what they export. */
export async function measure(n: number, perRuntime: boolean, scrapes: number): Promise<CardinalityFigures> {
  const now = Date.now();
  const runtimes = fleet(n, now);
  const registry = new Registry();
  attachFleetExpiryMetrics(
    registry,
    {
      caNotAfter: () => now + 3650 * DAY_MS,
      listenerNotAfter: () => now + 90 * DAY_MS,
      runtimes: () => runtimes,
    },
    { perRuntime },
  );
  let text = '';
  const times: number[] = [];
  for (let i = 0; i < scrapes; i++) {
    const t0 = performance.now();
    text = await registry.metrics();
    times.push(performance.now() - t0);
  }
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? '?';
    series.set(name, (series.get(name) ?? 0) + 1);
  }
  times.sort((a, b) => a - b);
  return {
    runtimes: n,
    perRuntime,
    series,
    totalSeries: [...series.values()].reduce((a, b) => a + b, 0),
    bytes: Buffer.byteLength(text),
    scrapeMs: times[Math.floor(times.length / 2)] ?? 0,
  };
}

async function main(): Promise<void> {
  const counts = envIntegers('BENCH_RUNTIMES', [500, 5000]);
  const scrapes = envNumber('BENCH_SCRAPES', 20);
  say(
    '| runtimes | per-runtime metrics | series | of which per runtime | exposition | scrape render (median) |',
  );
  say(
    '| -------: | ------------------- | -----: | -------------------: | ---------: | ---------------------: |',
  );
  for (const n of counts) {
    for (const perRuntime of [false, true]) {
      const f = await measure(n, perRuntime, scrapes);
      const own =
        (f.series.get('rtb_runtime_state') ?? 0) +
        (f.series.get('rtb_runtime_drift_client_certificate_expiration_timestamp_seconds') ?? 0);
      say(
        `| ${n.toLocaleString('en')} | ${perRuntime ? 'on' : 'off'} | ${f.totalSeries.toLocaleString('en')} | ${own.toLocaleString('en')} | ${(f.bytes / 1024).toFixed(0)} KiB | ${f.scrapeMs.toFixed(1)} ms |`,
      );
    }
  }
}

if (isMain(import.meta.url)) await main();
