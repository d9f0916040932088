// Issue 14's upkeep figures on a Ready fleet (bench/fleet-scale.ts, after the measured rotations):
// - memory over many rotations: the pull Secret rotated again and again, the controller's heap
//   after a full GC and its VmRSS after each, so growth shows as a slope, not a guess;
// - the periodic resync: one forced pass over every runtime (the same code the 10-minute timer
//   runs), its CPU, next to the controller's idle CPU, averaged over the default period.
import type { GroupCpu } from './cpu-groups.js';
import type { FleetModeContext } from './fleet-landscape.js';
import type { ControllerChildState } from './controller-child.js';
import type { ControllerProcess } from './kcp-bench.js';
import { queueProgress, untilQueueIdle } from './queue-progress.js';
import { sleep } from './processes.js';

/** The controller's memory after each of a series of rotations. */
export interface RotationMemory {
  /** Per rotation, in order: every status at the new version after this long. */
  readonly statusMs: readonly number[];
  /** Per rotation: V8 heap used after a full GC, KiB. */
  readonly heapKib: readonly number[];
  /** Per rotation: VmRSS after that GC, KiB. */
  readonly rssKib: readonly number[];
}

/** Rotates the pull Secret `count` times, each to every status, and reads memory after each. */
export async function rotateRepeatedly(
  c: FleetModeContext,
  ctl: ControllerProcess,
  count: number,
): Promise<RotationMemory> {
  const n = c.fleet.ids.length;
  const statusMs: number[] = [];
  const heapKib: number[] = [];
  const rssKib: number[] = [];
  for (let i = 1; i <= count; i++) {
    const before = (await ctl.state()).version;
    const t0 = performance.now();
    await c.writeSource(`memory-${i}`);
    const last = await c.tracker.until(
      n,
      (s) => s.appliedVersion !== undefined && s.appliedVersion !== before && s.state === 'Ready',
      600_000,
    );
    statusMs.push(last - t0);
    await untilQueueIdle(ctl, 0, 600_000);
    await ctl.gc();
    const s = await ctl.state();
    heapKib.push(s.heapUsedKib);
    rssKib.push(s.rssKib);
    c.say(
      `memory rotation ${i}/${count}: every status in ${((last - t0) / 1000).toFixed(1)} s; ` +
        `after GC heap ${(s.heapUsedKib / 1024).toFixed(0)} MiB, VmRSS ${(s.rssKib / 1024).toFixed(0)} MiB`,
    );
  }
  return { statusMs, heapKib, rssKib };
}

/** One forced resync pass over a Ready fleet, and what it costs averaged over `periodS`. */
export interface ResyncFigures {
  readonly periodS: number;
  /** From the pass's start until every runtime was reconciled and the queue idle. */
  readonly passS: number;
  readonly passCpu: GroupCpu;
  readonly cpuPerRuntimeMs: number;
  /** The controller's CPU with nothing to do, in cores, measured just before. */
  readonly idleCores: number;
  /** (pass CPU + idle CPU over the rest of the period) ÷ period, in cores. */
  readonly averageCores: number;
  /** Requests per runtime during the pass, and its writes to runtimes and the KCP. */
  readonly requestsPerRuntime: number;
  readonly writes: number;
}

/** Measures the controller idle for `idleS`, then one forced resync pass. */
export async function resyncCost(
  c: FleetModeContext,
  ctl: ControllerProcess,
  periodS = 600,
  idleS = 30,
): Promise<ResyncFigures> {
  const n = c.fleet.ids.length;
  await untilQueueIdle(ctl, 0, 600_000);
  const idleWindow = c.cpuWindow([ctl.pid]);
  await sleep(idleS * 1000);
  const idleCores = idleWindow.close().cores.controller ?? 0;
  const s0 = await ctl.state();
  const { done } = await queueProgress(ctl);
  const window = c.cpuWindow([ctl.pid]);
  const t0 = performance.now();
  await ctl.resync();
  await untilQueueIdle(ctl, done + n, 900_000);
  const passS = (performance.now() - t0) / 1000;
  const passCpu = window.close();
  const s1 = await ctl.state();
  const cpuS = (passCpu.cores.controller ?? 0) * passCpu.seconds;
  const { requestsPerRuntime, writes } = passTraffic(s0, s1, n);
  return {
    periodS,
    passS,
    passCpu,
    cpuPerRuntimeMs: (cpuS * 1000) / n,
    idleCores,
    averageCores: (cpuS + idleCores * Math.max(0, periodS - passS)) / periodS,
    requestsPerRuntime,
    writes,
  };
}

/** Requests per runtime between two states of the controller, and the writes among them (all but GETs). */
export function passTraffic(
  s0: ControllerChildState,
  s1: ControllerChildState,
  n: number,
): { requestsPerRuntime: number; writes: number } {
  const total = (m: Readonly<Record<string, number>>): number => Object.values(m).reduce((a, b) => a + b, 0);
  const writes = Object.entries(s1.requestPaths)
    .filter(([k]) => !/^\w+ GET /.test(k))
    .reduce((a, [k, v]) => a + v - (s0.requestPaths[k] ?? 0), 0);
  return { requestsPerRuntime: (total(s1.requests) - total(s0.requests)) / n, writes };
}
