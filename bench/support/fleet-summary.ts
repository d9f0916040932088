// The figures of bench/fleet-scale.ts and their summary, next to the issue's targets (for 5,000
// runtimes; at a smaller N the time targets are scaled linearly and say so).
import type { AttestedResyncFigures } from './attested-resync.js';
import type { ResyncFigures, RotationMemory } from './fleet-upkeep.js';
import type { GroupCpu } from './cpu-groups.js';
import { describeCpu } from './cpu-groups.js';
import { mb, verdict } from './stats.js';

/** The controller's requests in a phase. */
export interface Traffic {
  readonly runtime: number;
  readonly kcp: number;
  readonly runtimeTls: number;
  readonly kcpTls: number;
  /** Requests other than GET. */
  readonly runtimeWrites: number;
  readonly kcpWrites: number;
  /** By `kcp|runtime METHOD path`. */
  readonly byPath: Readonly<Record<string, number>>;
}

/** A same-run floor (./fleet-baselines.ts): a phase's unavoidable requests from the benchmark. */
export interface BaselineFigures {
  readonly ms: number;
  readonly cpuPerRuntimeMs: number;
  /** The requests it sends per runtime (to the runtime and the KCP). */
  readonly requestsPerRuntime: number;
  /**
   * The benchmark process's event-loop delay meanwhile, p99: what one thread doing only these
   * requests at this concurrency costs its loop (with delaying proxies, their work is in it too).
   */
  readonly loopP99Ms: number;
  /** The machine's CPU by process group meanwhile (the floor's requests are the benchmark's). */
  readonly cpu: GroupCpu;
}

/** One rotation of one source. */
export interface RotationFigures {
  readonly source: string;
  /** From the KCP write until every CR's status had the new version. */
  readonly statusMs: number;
  readonly cpu: GroupCpu;
  readonly controllerCpuPerRuntimeMs: number;
  readonly traffic: Traffic;
  readonly eventLoopP99Ms: number;
  readonly eventLoopMaxMs: number;
  /** The controller's garbage collections in the rotation: how many, their pauses' sum and the longest (ms). */
  readonly gc: { readonly count: number; readonly totalMs: number; readonly maxMs: number };
  /** The same window's p99 in a process that does nothing: the machine's share. */
  readonly idleLoopP99Ms: number;
  /** And its longest delay: how long the machine alone held a thread off a core. */
  readonly idleLoopMaxMs: number;
  /** The delaying proxies' process in the same window (undefined: no proxies). */
  readonly proxyLoopP99Ms: number | undefined;
  readonly openFds: number;
  readonly errors: number;
  readonly reconciles: number;
  readonly drift: {
    readonly sent: number;
    readonly accepted: number;
    readonly repaired: number;
    /** The controller's repair histogram (event received → set re-applied): bucket bound of p99. */
    readonly p99UpperS: number;
    /** Repairs that took longer than 1 s. */
    readonly overOneSecond: number;
    readonly meanS: number;
  };
  /** The same writes from the benchmark over keep-alive connections at the same concurrency. */
  readonly baseline: BaselineFigures;
}

/** The controller's memory after a full GC (KiB). */
export interface MemoryAfterGc {
  readonly rss: number;
  /** V8 heap used, and committed. */
  readonly heap: number;
  readonly heapTotal: number;
  /** Memory of JS objects outside the heap (buffers). */
  readonly external: number;
}

/** One N. */
export interface FleetFigures {
  readonly runtimes: number;
  readonly pool: number;
  readonly concurrency: number;
  /** The round trip to every runtime's API server the proxies add (0: loopback). */
  readonly rttMs: number;
  readonly startSeconds: number;
  readonly onboarding: {
    readonly createSeconds: number;
    readonly readySeconds: number;
    readonly controllerCpuPerRuntimeMs: number;
    readonly cpu: GroupCpu;
    readonly traffic: Traffic;
    readonly reconciles: number;
    readonly errors: number;
    readonly eventLoopP99Ms: number;
    readonly eventLoopMaxMs: number;
    readonly idleLoopP99Ms: number;
    /** Each CR's Ready after the first was created: median, 90th percentile, the last (s). */
    readonly readyAfter: { readonly medianS: number; readonly p90S: number; readonly lastS: number };
    /** CRs seen Installing before Ready, and the longest of them from Installing to Ready (s). */
    readonly installing: { readonly count: number; readonly longestS: number };
    /** What an install must do at least, from the benchmark, after the onboarding. */
    readonly floor: BaselineFigures;
  };
  readonly rotations: readonly RotationFigures[];
  /** KiB. */
  readonly memory: {
    readonly rssEmpty: number;
    readonly rssReady: number;
    readonly rssAfter: number;
    readonly gcEmpty: MemoryAfterGc;
    readonly gcReady: MemoryAfterGc;
    readonly gcAfter: MemoryAfterGc;
  };
  /** The phases after the rotations; absent with BENCH_FLEET_PHASES=rotations. */
  readonly resync?: ResyncFigures;
  /** The periodic resync as it runs: runtimes attest, the tick skips those in sync. */
  readonly attested?: AttestedResyncFigures;
  /** Rotations after the measured ones, memory after each. */
  readonly memorySeries?: RotationMemory;
  readonly restart?: {
    /** From the new process's start until it served /readyz (caches synced). */
    readonly startedS: number;
    /** Until every CR was reconciled once and the queue was idle. */
    readonly caughtUpS: number;
    readonly traffic: Traffic;
    readonly eventLoopP99Ms: number;
    readonly idleLoopP99Ms: number;
    /** A new process's reads of every runtime, from the benchmark, after the restart. */
    readonly floor: BaselineFigures;
  };
  /** VmRSS of one pool kube-apiserver (KiB). */
  readonly apiserverRss: number;
}

const FLEET = 5_000;
const gc = (m: MemoryAfterGc): string =>
  `${mb(m.rss)} / ${mb(m.heap)} / ${mb(m.heapTotal)} / ${mb(m.external)}`;
const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const per = (count: number, n: number): string => (count / n).toFixed(2);

/** `runtime PATCH /api/v1/namespaces/kyma-system/secrets/… 1.00; kcp PATCH …/status 1.00` per runtime. */
function describePaths(paths: Readonly<Record<string, number>>, n: number): string {
  return Object.entries(paths)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${per(v, n)}`)
    .join('; ');
}

/** The summary lines of one N. */
export function fleetSummary(f: FleetFigures): string[] {
  const n = f.runtimes;
  const scale = n / FLEET;
  const scaled = (targetS: number): string =>
    n === FLEET
      ? `${targetS} s`
      : `${(targetS * scale).toFixed(1)} s, ${targetS} s at ${FLEET} scaled to ${n}`;
  const o = f.onboarding;
  const lines = [
    `fleet scale, ${n} runtimes on ${f.pool} kube-apiservers (${(n / f.pool).toFixed(0)} per server), concurrency ${f.concurrency}, ` +
      (f.rttMs > 0
        ? `${f.rttMs} ms round trip to every runtime (delaying proxies), the KCP local:`
        : 'loopback:'),
    `  onboarding: every CR Ready ${o.readySeconds.toFixed(1)} s after the first was created (creating them took ${o.createSeconds.toFixed(1)} s); ` +
      `target ${scaled(180)}: ${verdict(o.readySeconds <= 180 * scale)}`,
    `    controller CPU ${o.controllerCpuPerRuntimeMs.toFixed(1)} ms per runtime; ${per(o.traffic.runtime, n)} requests and ${per(o.traffic.runtimeTls, n)} TLS connections per runtime, ` +
      `${per(o.traffic.kcp, n)} KCP requests per runtime; ${per(o.reconciles, n)} reconciles per runtime; errors ${o.errors}; ` +
      `event loop p99 ${o.eventLoopP99Ms.toFixed(0)} ms (an idle process: ${o.idleLoopP99Ms.toFixed(0)} ms), max ${o.eventLoopMaxMs.toFixed(0)} ms`,
    `    each CR Ready after: median ${o.readyAfter.medianS.toFixed(1)} s, p90 ${o.readyAfter.p90S.toFixed(1)} s, the last ${o.readyAfter.lastS.toFixed(1)} s; ` +
      `${o.installing.count} seen Installing, the longest Installing ${o.installing.longestS.toFixed(1)} s`,
    `    requests per runtime: ${describePaths(o.traffic.byPath, n)}`,
    `    CPU: ${describeCpu(o.cpu)}`,
    `    floor: ${floorLine(o.floor, o.readySeconds * 1000, o.controllerCpuPerRuntimeMs)}`,
  ];
  for (const r of f.rotations) {
    const ratio = r.statusMs / r.baseline.ms;
    const writes = r.traffic.runtimeWrites / n;
    // One write of the changed object: the runtime computes the set version from its objects.
    const minimal = 1;
    lines.push(
      `  rotation of the ${r.source}: ${writes.toFixed(2)} writes per runtime to the runtime ` +
        // Drift repairs and their forced passes write the whole set: no target for that rotation.
        (r.drift.sent > 0
          ? '(with the repairs and their forced passes), '
          : `(target ${minimal}: ${verdict(writes <= minimal + 0.005)}), `) +
        `${per(r.traffic.kcpWrites, n)} to the KCP; the floor sends ${r.baseline.requestsPerRuntime - 1} + 1`,
      `  rotation of the ${r.source}: every status updated after ${s(r.statusMs)} (target ${scaled(30)}: ${verdict(r.statusMs <= 30_000 * scale)}); ` +
        `minimal-write floor ${s(r.baseline.ms)}, controller ÷ floor ${ratio.toFixed(2)} (target 1.3: ${verdict(ratio <= 1.3)})`,
      `    controller CPU ${r.controllerCpuPerRuntimeMs.toFixed(1)} ms per runtime (target 4: ${verdict(r.controllerCpuPerRuntimeMs <= 4)}), ` +
        `baseline ${r.baseline.cpuPerRuntimeMs.toFixed(1)} ms; errors and retries ${r.errors} (target 0: ${verdict(r.errors === 0)}); ${per(r.reconciles, n)} reconciles per runtime`,
      `    per runtime: ${per(r.traffic.runtime, n)} requests, ${per(r.traffic.runtimeTls, n)} new TLS connections; KCP ${per(r.traffic.kcp, n)} requests, ${r.traffic.kcpTls} new TLS connections in all`,
      `    requests per runtime: ${describePaths(r.traffic.byPath, n)}`,
      `    event loop p99 ${r.eventLoopP99Ms.toFixed(0)} ms (target 100: ${verdict(r.eventLoopP99Ms <= 100)}; the floor's process: ${r.baseline.loopP99Ms.toFixed(0)} ms; an idle process: ${r.idleLoopP99Ms.toFixed(0)} ms, max ${r.idleLoopMaxMs.toFixed(0)} ms${r.proxyLoopP99Ms === undefined ? '' : `; the delaying proxies' process: ${r.proxyLoopP99Ms.toFixed(0)} ms`}), max ${r.eventLoopMaxMs.toFixed(0)} ms; ` +
        `${r.gc.count} collections, their pauses ${r.gc.totalMs.toFixed(0)} ms in all, the longest ${r.gc.maxMs.toFixed(0)} ms; open fds after ${r.openFds}`,
      // Only the rotation with drift reports has repairs to judge.
      ...(r.drift.sent > 0
        ? [
            `    drift reports during it: ${r.drift.sent} sent, ${r.drift.accepted} accepted, ${r.drift.repaired} repairs; ` +
              `p99 ≤ ${r.drift.p99UpperS} s (histogram bucket; target 1 s: ${verdict(r.drift.p99UpperS <= 1)}), ${r.drift.overOneSecond} over 1 s, mean ${(r.drift.meanS * 1000).toFixed(0)} ms`,
          ]
        : []),
      `    CPU: ${describeCpu(r.cpu)}`,
      `    the floor's CPU: ${describeCpu(r.baseline.cpu)}`,
    );
  }
  const m = f.memory;
  lines.push(
    `  controller VmRSS: ${mb(m.rssEmpty)} empty, ${mb(m.rssReady)} Ready, ${mb(m.rssAfter)} after the rotations ` +
      `(target under 400 MB at ${FLEET}: ${verdict(m.rssAfter * 1.024 < 400_000)} here)`,
    `  after a full GC (VmRSS / heap used / heap committed / external): ${gc(m.gcEmpty)} empty; ${gc(m.gcReady)} Ready; ${gc(m.gcAfter)} after the rotations; ` +
      `${(((m.gcAfter.heap - m.gcEmpty.heap) * 1.024) / n).toFixed(1)} KB of heap per runtime`,
  );
  const rt = f.restart;
  if (rt === undefined) return lines;
  lines.push(
    ...upkeepLines(f),
    // Most of a restart at a small N is the process's start: the 5,000 target, unscaled.
    `  restart with everything Ready: serving after ${rt.startedS.toFixed(1)} s, caught up after ${rt.caughtUpS.toFixed(1)} s (target 30 s at ${FLEET}: ${verdict(rt.caughtUpS <= 30)}); ` +
      `writes: ${rt.traffic.runtimeWrites} to runtimes, ${rt.traffic.kcpWrites} to the KCP (target 0: ${verdict(rt.traffic.runtimeWrites + rt.traffic.kcpWrites === 0)}); ` +
      `reads ${per(rt.traffic.runtime, n)} per runtime; event loop p99 ${rt.eventLoopP99Ms.toFixed(0)} ms (an idle process: ${rt.idleLoopP99Ms.toFixed(0)} ms)`,
    `    requests per runtime: ${describePaths(rt.traffic.byPath, n)}`,
    `    floor: ${floorLine(rt.floor, (rt.caughtUpS - rt.startedS) * 1000, undefined, 'controller from serving to caught up')}`,
    `  one pool kube-apiserver: VmRSS ${mb(f.apiserverRss)}; the pool started in ${f.startSeconds.toFixed(0)} s`,
  );
  return lines;
}

/** A floor next to the controller's time (and CPU per runtime, if measured). */
function floorLine(
  b: BaselineFigures,
  controllerMs: number,
  controllerCpuMs?: number,
  what = 'controller',
): string {
  return (
    `the same-run floor from the benchmark ${s(b.ms)} (${what} ÷ floor ${(controllerMs / b.ms).toFixed(2)}), ` +
    `${b.cpuPerRuntimeMs.toFixed(1)} ms CPU per runtime` +
    (controllerCpuMs === undefined ? '' : ` (controller ${controllerCpuMs.toFixed(1)} ms)`) +
    `, ${b.requestsPerRuntime} requests per runtime, its event loop p99 ${b.loopP99Ms.toFixed(0)} ms; ` +
    `CPU: ${describeCpu(b.cpu)}`
  );
}

/** The resync's cost and memory over the extra rotations. */
function upkeepLines(f: FleetFigures): string[] {
  const r = f.resync;
  const a = f.attested;
  const m = f.memorySeries;
  if (r === undefined || a === undefined || m === undefined) return [];
  const lines = [
    `  periodic resync, one forced pass: ${r.passS.toFixed(1)} s, controller CPU ${r.cpuPerRuntimeMs.toFixed(1)} ms per runtime, ` +
      `${r.requestsPerRuntime.toFixed(2)} requests per runtime, ${r.writes} writes; idle ${(r.idleCores * 100).toFixed(2)} % of a core; ` +
      `averaged over ${r.periodS} s ${(r.averageCores * 100).toFixed(1)} % of a core (target 10 % at ${FLEET}: ${verdict(r.averageCores <= 0.1)})`,
    `    CPU: ${describeCpu(r.passCpu)}`,
  ];
  // What the pass's requests cost at the baseline's CPU per request: the floor of a forced pass.
  const b = f.rotations[0]?.baseline;
  if (b) {
    const perRequestMs = b.cpuPerRuntimeMs / b.requestsPerRuntime;
    const floorMs = perRequestMs * r.requestsPerRuntime;
    lines.push(
      `    the same-run baseline's ${perRequestMs.toFixed(2)} ms per request × ${r.requestsPerRuntime.toFixed(0)} requests: ` +
        `${floorMs.toFixed(1)} ms per runtime, ` +
        `${(((floorMs * f.runtimes) / 1000 / r.periodS) * 100).toFixed(1)} % of a core over ${r.periodS} s`,
    );
  }
  lines.push(
    `  periodic resync with attestations (the default): ${(a.averageCores * 100).toFixed(1)} % of a core averaged over ${a.periodS} s ` +
      `(target 10 % at ${FLEET}: ${verdict(a.averageCores <= 0.1)}); runtimes in sync are skipped but for a share of them each period`,
    `    ${a.attestations} attestations, each a new TLS connection: ${a.cpuPerAttestationMs.toFixed(2)} ms controller CPU each, ` +
      `${a.verdicts.inSync} in sync, ${a.verdicts.outOfSync} not (each a pass), ${a.verdicts.failed} failed; ` +
      `${a.attestationsPerRuntime.toFixed(2)} per runtime per period (one attestor per runtime every ${a.intervalS} s × 0.8–1.0)`,
    `    one tick: ${a.tick.forced} forced (their share of the full pass and any not in sync), ${a.tick.skipped} skipped; ` +
      `${a.tickS.toFixed(1)} s, ${(a.tickCpuMs / 1000).toFixed(1)} s controller CPU, ${a.tickRequestsPerRuntime.toFixed(2)} requests per runtime, ${a.tickWrites} writes`,
  );
  const heap = m.heapKib;
  if (heap.length === 0) return lines;
  const first = f.rotations.length + 1;
  const half = Math.floor(heap.length / 2);
  const early = heap.slice(0, Math.max(half, 1));
  const late = heap.slice(half);
  const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
  const growth = mean(late) - mean(early);
  const mib = (kib: number): string => `${(kib / 1024).toFixed(1)} MiB`;
  lines.push(
    `  memory over rotations ${first}–${f.rotations.length + heap.length} (heap used after a full GC): ` +
      heap.map((h) => (h / 1024).toFixed(0)).join(', ') +
      ` MiB; VmRSS ${mib(Math.min(...m.rssKib))}–${mib(Math.max(...m.rssKib))}`,
    `    second half's mean − first half's: ${mib(growth)} (target: no growth: ${verdict(growth <= 0.02 * mean(early))}); ` +
      `rotations took ${s(Math.min(...m.statusMs))}–${s(Math.max(...m.statusMs))}`,
  );
  return lines;
}
