// Issue 14, beyond one replica: the same rotation with 1 controller replica (as today: no
// sharding) and with k sharded replicas (each a controller child with a Lease of its own), in
// one run on one fleet (bench/fleet-scale.ts with BENCH_FLEET_REPLICAS=1,3). Per replica count:
// the time from the KCP write until every CR's status has the new version, the controllers' CPU
// together per runtime, how the runtimes were spread, and errors. On this 2-core machine the
// replicas share the cores with each other and with every API server, so more replicas cannot
// add CPU here: what the figure shows is the cost of sharding (hashing, Leases, the watch of
// every CR by every replica) and the spread, not the speed-up a KCP with more nodes would see.
import { freePort } from '../../src/envtest/free-port.js';
import type { GroupCpu } from './cpu-groups.js';
import { metricValue } from './cpu-groups.js';
import type { FleetModeContext } from './fleet-landscape.js';
import type { ControllerProcess } from './kcp-bench.js';
import { counterDelta } from './metric-deltas.js';
import { sleep } from './processes.js';
import { FANOUT_QUEUE, fanoutIdle } from './queue-progress.js';

/** One rotation with `replicas` controllers. */
export interface ReplicaRotation {
  readonly replicas: number;
  /** Seconds from starting the replicas until they had divided the runtimes among them. */
  readonly settleSeconds: number;
  readonly statusMs: number;
  readonly cpu: GroupCpu;
  /** All controllers' CPU together, per runtime. */
  readonly controllerCpuPerRuntimeMs: number;
  /** Runtimes each replica worked. */
  readonly owned: readonly number[];
  readonly reconciles: number;
  /** Runtimes that changed hands during the rotation (should be 0: nobody joined or left). */
  readonly moves: number;
  readonly errors: number;
}

/** The Lease timing of the sharded replicas: client-go's defaults, as `rtb controller` has them. */
const TIMING = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

/**
 * Starts `replicas` sharded controllers (1: one unsharded, as today), waits until the runtimes
 * are divided, rotates the pull Secret once, measures, and stops them (gracefully: their Leases
 * are released).
 */
export async function rotateWithReplicas(
  c: FleetModeContext,
  replicas: number,
  label: string,
): Promise<ReplicaRotation> {
  const n = c.fleet.ids.length;
  const t0 = performance.now();
  const ctls: ControllerProcess[] = [];
  try {
    for (let i = 0; i < replicas; i++) {
      const name = `replicas-${replicas}-${i + 1}`;
      const drift = c.fleet.controllerConfig.drift;
      ctls.push(
        await c.fleet.startController(name, {
          port: await freePort(),
          ...(drift ? { drift: { ...drift, listenerPort: await freePort() } } : {}),
          ...(replicas > 1 ? { shard: { identity: name, timing: TIMING } } : {}),
        }),
      );
    }
    // Settled: every runtime worked somewhere (once each) and every queue idle.
    for (;;) {
      const ms = await Promise.all(ctls.map((ctl) => ctl.metrics()));
      const owned = ms.map((m) => (replicas > 1 ? metricValue(m, 'rtb_shard_owned_runtimes') : n));
      const idle = ms.every(fanoutIdle);
      if (owned.reduce((a, b) => a + b, 0) === n && idle) break;
      if (performance.now() - t0 > 300_000) throw new Error(`replicas own ${owned.join('+')} of ${n}`);
      await sleep(200);
    }
    const settleSeconds = (performance.now() - t0) / 1000;
    const before = await Promise.all(ctls.map((ctl) => ctl.metrics()));
    const version = (await ctls[0]?.state())?.version;
    const cpu = c.cpuWindow(ctls.map((ctl) => ctl.pid));
    const tw = performance.now();
    await c.writeSource(label);
    const last = await c.tracker.until(
      n,
      (s) => s.appliedVersion !== undefined && s.appliedVersion !== version && s.state === 'Ready',
      600_000,
    );
    const window = cpu.close();
    await sleep(1_000);
    const after = await Promise.all(ctls.map((ctl) => ctl.metrics()));
    const sum = (f: (m0: string, m1: string) => number): number =>
      before.reduce((a, m0, i) => a + f(m0, after[i] ?? m0), 0);
    const result: ReplicaRotation = {
      replicas,
      settleSeconds,
      statusMs: last - tw,
      cpu: window,
      controllerCpuPerRuntimeMs: ((window.cores.controller ?? 0) * window.seconds * 1000) / n,
      owned: after.map((m) => (replicas > 1 ? metricValue(m, 'rtb_shard_owned_runtimes') : n)),
      reconciles: sum((m0, m1) =>
        counterDelta(m0, m1, 'workqueue_work_duration_seconds_count', FANOUT_QUEUE),
      ),
      moves: sum((m0, m1) => counterDelta(m0, m1, 'rtb_shard_ownership_moves_total', { direction: 'lost' })),
      errors: sum(
        (m0, m1) =>
          counterDelta(m0, m1, 'rtb_runtime_sync_errors_total') +
          counterDelta(m0, m1, 'workqueue_retries_total', FANOUT_QUEUE),
      ),
    };
    c.say(
      `${replicas} replica${replicas === 1 ? '' : 's'}${replicas > 1 ? ' (sharded)' : ''}: divided in ${settleSeconds.toFixed(1)} s ` +
        `(${result.owned.join(' + ')}); rotation: every status in ${(result.statusMs / 1000).toFixed(1)} s, ` +
        `controllers' CPU ${result.controllerCpuPerRuntimeMs.toFixed(1)} ms per runtime, ` +
        `${result.reconciles} reconciles, ${result.moves} runtimes moved meanwhile, errors ${result.errors}`,
    );
    return result;
  } finally {
    for (const ctl of ctls) await ctl.proc.stop();
  }
}
