// Issue 16's benchmark: one change over the fleet in waves of 1 %, 10 % and 100 % with zero soak,
// time per wave and in all, next to the same kind of change in one wave of everything (a policy
// of one wave) and without a policy (every runtime at once, as before rollouts), in one run on
// one fleet (bench/fleet-scale.ts with BENCH_FLEET_WAVES=1). Each change is a new pull Secret.
// No webhook runs in the fleet: ./webhook-reports.ts (started by bench/fleet-scale.ts) writes, per
// pool server, the report a webhook taking every set would write, and the controller reads it per runtime as it would on a
// real runtime. A wave starts, and ends, when the policy's status (watched) says so.
import {
  newRolloutPolicy,
  rolloutPolicyPath,
  type RolloutPolicySpec,
  type RolloutWaveSpec,
} from '../../src/api/rollout-policy.js';
import { rolloutPolicyCrd } from '../../src/api/rollout-policy-crd.js';
import { assignWaves } from '../../src/controller/rollout/wave-assignment.js';
import { freePort } from '../../src/envtest/free-port.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import type { FleetModeContext } from './fleet-landscape.js';
import type { ControllerProcess } from './kcp-bench.js';
import { counterDelta, countsDelta } from './metric-deltas.js';
import { PolicyTracker } from './policy-tracker.js';
import { FANOUT_QUEUE, untilQueueIdle } from './queue-progress.js';
import { sleep } from './processes.js';

const ROLLOUT_QUEUE = { name: 'rollout' };
/** The issue's waves: 1 %, then 10 % of the rest, then all of the rest; no soak. */
const WAVES: readonly RolloutWaveSpec[] = [
  { name: 'one-percent', percent: 1, soak: '0s' },
  { name: 'ten-percent', percent: 10, soak: '0s' },
  { name: 'all', percent: 100, soak: '0s' },
];
const ONE_WAVE: readonly RolloutWaveSpec[] = [{ name: 'all', percent: 100, soak: '0s' }];
const LIMIT_MS = 900_000;

/** One wave of a rollout, in seconds from the KCP write. */
export interface WaveTiming {
  readonly name: string;
  readonly runtimes: number;
  /** The policy's status said this wave started. */
  readonly startedS: number;
  /** The next wave started (or the rollout completed): every runtime of this one was healthy. */
  readonly doneS: number;
}

/** One change rolled out, in seconds from the KCP write. */
export interface WavesRun {
  readonly label: string;
  readonly waves: readonly WaveTiming[];
  /** Every CR Ready with the new set applied. */
  readonly appliedS: number;
  /** The policy's status said Complete (undefined without a policy). */
  readonly completeS: number | undefined;
  /** Rollout passes, and status writes of RuntimeBootstrappers, meanwhile. */
  readonly passes: number;
  readonly statusWrites: number;
  readonly reconciles: number;
  readonly errors: number;
  readonly controllerCpuPerRuntimeMs: number;
}

const putPolicy = (
  c: FleetModeContext,
  waves: readonly RolloutWaveSpec[],
  create: boolean,
): Promise<unknown> => {
  const spec: RolloutPolicySpec = { waves: [...waves], failureThreshold: 0, healthDeadline: '10m' };
  return kubeRequest(c.fleet.kcpAccess, {
    method: create ? 'POST' : 'PATCH',
    path: create ? rolloutPolicyPath() : rolloutPolicyPath('default'),
    body: create ? newRolloutPolicy(spec) : { spec },
  });
};

/** One change (a pull Secret labelled `label`) rolled out under `waves` (undefined: no policy). */
async function rollOut(
  c: FleetModeContext,
  ctl: ControllerProcess,
  policy: PolicyTracker,
  waves: readonly RolloutWaveSpec[] | undefined,
  label: string,
): Promise<WavesRun> {
  const ids = c.fleet.ids;
  const s0 = await ctl.state();
  const m0 = await ctl.metrics();
  const from = policy.seen.length;
  const cpu = c.cpuWindow([ctl.pid]);
  const t0 = performance.now();
  const seconds = (at: number): number => (at - t0) / 1000;
  await c.writeSource(label);
  const isNew = (v: string | undefined): boolean => v !== undefined && v !== s0.version;
  const appliedAt = await c.tracker.until(
    ids.length,
    (s) => isNew(s.appliedVersion) && s.state === 'Ready',
    LIMIT_MS,
  );
  let completeAt: number | undefined;
  const timings: WaveTiming[] = [];
  if (waves) {
    const done = await policy.until(
      from,
      (p) => p.phase === 'Complete' && p.target !== undefined && !p.target.startsWith(`${s0.version}/`),
      LIMIT_MS,
    );
    completeAt = done.at;
    const states = policy.seen.slice(from).filter((p) => p.target === done.target);
    const startOf = (k: number): number =>
      states.find((p) => (p.wave ?? -1) >= k || p.phase === 'Complete')?.at ?? done.at;
    const members = assignWaves(
      waves.map((w) => ({
        name: w.name,
        ...(w.percent !== undefined ? { percent: w.percent } : {}),
        soakMs: 0,
      })),
      ids.map((id) => ({ id })),
    );
    for (let k = 0; k <= waves.length; k++) {
      const runtimes = ids.filter((id) => members.get(id) === k).length;
      if (k === waves.length && runtimes === 0) break; // no implicit last wave
      timings.push({
        name: waves[k]?.name ?? 'rest',
        runtimes,
        startedS: seconds(startOf(k)),
        doneS: seconds(startOf(k + 1)),
      });
    }
  }
  const window = cpu.close();
  await sleep(1_000);
  const s1 = await ctl.state();
  const m1 = await ctl.metrics();
  const byPath = countsDelta(s0.requestPaths, s1.requestPaths);
  const statusWrites = Object.entries(byPath)
    .filter(
      ([k]) => k.startsWith('kcp PATCH ') && k.includes('/runtimebootstrappers/') && k.endsWith('/status'),
    )
    .reduce((a, [, v]) => a + v, 0);
  return {
    label: waves ? waves.map((w) => `${w.percent ?? 0} %`).join(', ') : 'no policy',
    waves: timings,
    appliedS: seconds(appliedAt),
    completeS: completeAt === undefined ? undefined : seconds(completeAt),
    passes: counterDelta(m0, m1, 'workqueue_work_duration_seconds_count', ROLLOUT_QUEUE),
    statusWrites,
    reconciles: counterDelta(m0, m1, 'workqueue_work_duration_seconds_count', FANOUT_QUEUE),
    errors:
      counterDelta(m0, m1, 'rtb_runtime_sync_errors_total') +
      counterDelta(m0, m1, 'workqueue_retries_total', FANOUT_QUEUE),
    controllerCpuPerRuntimeMs: ((window.cores.controller ?? 0) * window.seconds * 1000) / ids.length,
  };
}

/** A line per run: total, waves, and what the controller did meanwhile. */
export function wavesSummary(n: number, runs: readonly WavesRun[]): string[] {
  const oneWave = runs.find((r) => r.waves.length === 1)?.completeS;
  return runs.map((r) => {
    const waves = r.waves
      .map((w) => `${w.name} (${w.runtimes}) ${w.startedS.toFixed(1)}–${w.doneS.toFixed(1)} s`)
      .join(', ');
    const complete =
      r.completeS === undefined
        ? ''
        : `, complete ${r.completeS.toFixed(1)} s${oneWave !== undefined && r.waves.length > 1 ? ` (×${(r.completeS / oneWave).toFixed(2)} one wave)` : ''}`;
    return (
      `${n} runtimes, ${r.label}: every CR at the new set ${r.appliedS.toFixed(1)} s${complete}` +
      `${waves ? `; waves: ${waves}` : ''}; ${r.passes} rollout passes for ${r.statusWrites} CR status writes, ` +
      `${r.reconciles} reconciles, controller CPU ${r.controllerCpuPerRuntimeMs.toFixed(1)} ms per runtime, errors ${r.errors}`
    );
  });
}

/**
 * After onboarding (the onboarding controller stopped): a controller following the RolloutPolicy
 * `default`; one change without a policy, one under a policy of one wave, one in the issue's
 * three waves.
 */
export async function rolloutInWaves(c: FleetModeContext): Promise<readonly WavesRun[]> {
  await ensureCrds(c.fleet.kcp.kubeConfig(), [rolloutPolicyCrd()]);
  const policy = new PolicyTracker(c.fleet.kcpAccess);
  await policy.start();
  const drift = c.fleet.controllerConfig.drift;
  const ctl = await c.fleet.startController('waves', {
    port: await freePort(),
    ...(drift ? { drift: { ...drift, listenerPort: await freePort() } } : {}),
    rollout: { policyName: 'default' },
  });
  try {
    const n = c.fleet.ids.length;
    await untilQueueIdle(ctl, 0, LIMIT_MS);
    const runs: WavesRun[] = [await rollOut(c, ctl, policy, undefined, 'waves-0')];
    await putPolicy(c, ONE_WAVE, true);
    // Adopted: every runtime placed, and its webhook's report read once.
    await policy.until(0, (p) => p.phase === 'Complete', LIMIT_MS);
    await c.tracker.until(
      n,
      (s) => s.servedVersion !== undefined && s.servedVersion === s.appliedVersion,
      LIMIT_MS,
    );
    await untilQueueIdle(ctl, 0, LIMIT_MS);
    runs.push(await rollOut(c, ctl, policy, ONE_WAVE, 'waves-1'));
    await putPolicy(c, WAVES, false);
    await sleep(2_000);
    await untilQueueIdle(ctl, 0, LIMIT_MS);
    runs.push(await rollOut(c, ctl, policy, WAVES, 'waves-3'));
    for (const line of wavesSummary(n, runs)) c.say(line);
    return runs;
  } finally {
    await ctl.proc.stop();
    await policy.stop();
  }
}
