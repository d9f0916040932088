// Issue 14's periodic-resync figure with attestations (docs/attestation.md), on a Ready fleet
// right after a forced pass (bench/support/fleet-upkeep.ts, whose watch of the drift client
// Secrets runs during that pass):
// - every runtime attests once (the first, empty attestation of each is not measured: it only
//   fetches the list), each over a new TLS connection resuming the first one's session: controller
//   CPU per attestation;
// - one period's tick: attested runtimes skipped but for their share of the staggered full pass;
// - averaged over the default period with the attestations a period brings (one attestor per
//   runtime, the webhook replica leading the trust restarter, attests after 0.8–1.0 × the
//   interval the KCP answers).
import { attestIntervalSeconds } from '../../src/controller/direct/periodic-resync.js';
import { ANSWER_JITTER_FLOOR } from '../../src/drift/attestation-outcome.js';
import type { ManagedRef } from '../../src/api/attestation.js';
import type { GroupCpu } from './cpu-groups.js';
import { attestationOf, FleetAttester, readRefs, type WatcherSecretVersions } from './fleet-attestations.js';
import type { FleetModeContext } from './fleet-landscape.js';
import { passTraffic } from './fleet-upkeep.js';
import type { ControllerProcess } from './kcp-bench.js';
import { forEachLimited } from './limited.js';
import { queueProgress, untilQueueIdle } from './queue-progress.js';
import type { RuntimeIdentities } from './runtime-identities.js';

/** The periodic resync's cost when runtimes attest. */
export interface AttestedResyncFigures {
  readonly periodS: number;
  /** The interval the KCP answers with the default period, and attestations per runtime per period. */
  readonly intervalS: number;
  readonly attestationsPerRuntime: number;
  /** The measured round: one attestation per runtime. */
  readonly attestations: number;
  readonly verdicts: { readonly inSync: number; readonly outOfSync: number; readonly failed: number };
  readonly roundS: number;
  readonly roundCpu: GroupCpu;
  readonly cpuPerAttestationMs: number;
  /** One tick of the periodic resync, until its passes were done. */
  readonly tick: { readonly forced: number; readonly skipped: number };
  readonly tickS: number;
  readonly tickCpuMs: number;
  readonly tickRequestsPerRuntime: number;
  readonly tickWrites: number;
  readonly idleCores: number;
  /** (attestations of a period + a tick) ÷ period + idle, in cores. */
  readonly averageCores: number;
  /** Runtime ID → the objects the KCP answered it to attest (its record). */
  readonly checks: ReadonlyMap<string, readonly ManagedRef[]>;
}

/** What the measurement needs besides the fleet. */
export interface AttestedResyncInputs {
  readonly identities: RuntimeIdentities;
  readonly listenerPort: number;
  /** Watching since before the latest forced pass. */
  readonly watcherSecrets: WatcherSecretVersions;
  /** The controller's CPU with nothing to do, in cores. */
  readonly idleCores: number;
  readonly periodS?: number;
}

const CONCURRENCY = 16;

/** Measures one attestation per runtime and one tick; see the file's head. */
export async function attestedResyncCost(
  c: FleetModeContext,
  ctl: ControllerProcess,
  i: AttestedResyncInputs,
): Promise<AttestedResyncFigures> {
  const { ids, pool } = c.fleet;
  const n = ids.length;
  const periodS = i.periodS ?? 600;
  const attester = new FleetAttester(i.identities, i.listenerPort);

  const verdicts = { inSync: 0, outOfSync: 0, failed: 0 };
  let roundS = 0;
  let roundCpu: GroupCpu | undefined;
  const checks = new Map<string, readonly ManagedRef[]>();
  try {
    // The first attestation of each runtime is empty and fetches the list to attest.
    // Its challenge is echoed in the next, as the attestor does.
    const challenges = new Map<string, string | undefined>();
    await forEachLimited(ids, CONCURRENCY, async (id) => {
      const r = await attester.send(id, { objects: [] });
      if (!r.answer) throw new Error(`the first attestation of ${id} was answered ${r.status}`);
      checks.set(id, r.answer.check);
      challenges.set(id, r.answer.challenge);
    });
    const allRefs = new Map<string, ManagedRef>();
    for (const check of checks.values()) for (const ref of check) allRefs.set(JSON.stringify(ref), ref);
    const serverVersions = await Promise.all(pool.map((server) => readRefs(server, [...allRefs.values()])));
    const own = i.watcherSecrets.versions();
    const bodies = ids.map((id, index) => ({
      ...attestationOf(checks.get(id) ?? [], serverVersions[index % pool.length] ?? new Map(), own.get(id)),
      challenge: challenges.get(id),
    }));

    // The measured round, then the passes its out-of-sync verdicts queued.
    await untilQueueIdle(ctl, 0, 600_000);
    const before = (await queueProgress(ctl)).done;
    const window = c.cpuWindow([ctl.pid]);
    const t0 = performance.now();
    await forEachLimited(ids, CONCURRENCY, async (id, index) => {
      const r = await attester.send(id, bodies[index] ?? { objects: [] }).catch(() => ({ status: 0 }));
      if (!('answer' in r) || !r.answer) verdicts.failed += 1;
      else if (r.answer.inSync) verdicts.inSync += 1;
      else verdicts.outOfSync += 1;
    });
    await untilQueueIdle(ctl, before + verdicts.outOfSync, 900_000);
    roundS = (performance.now() - t0) / 1000;
    roundCpu = window.close();
    if (verdicts.outOfSync > 0) {
      const why = ctl.proc
        .logTail(5_000)
        .split('\n')
        .filter((l) => l.includes('attestation out of sync'))
        .slice(0, 2);
      c.say(
        `out of sync, as the controller logged it: ${why.join('\n') || '(BENCH_LOG_LEVEL=info logs it)'}`,
      );
    }
  } finally {
    attester.close();
  }
  const roundCpuMs = (roundCpu.cores.controller ?? 0) * roundCpu.seconds * 1000;

  // One tick: the runtimes in sync are skipped, their share of the full pass is not.
  const s0 = await ctl.state();
  const tickWindow = c.cpuWindow([ctl.pid]);
  const t1 = performance.now();
  const done0 = (await queueProgress(ctl)).done;
  const tick = await ctl.periodicResync();
  await untilQueueIdle(ctl, done0 + tick.forced, 900_000);
  const tickS = (performance.now() - t1) / 1000;
  const tickCpu = tickWindow.close();
  const tickCpuMs = (tickCpu.cores.controller ?? 0) * tickCpu.seconds * 1000;
  const traffic = passTraffic(s0, await ctl.state(), n);

  const intervalS = attestIntervalSeconds(periodS * 1000);
  const meanWaitS = (intervalS * (1 + ANSWER_JITTER_FLOOR)) / 2;
  // The webhook's trust restarter is on by default, and its leader is the runtime's one attestor.
  const attestationsPerRuntime = periodS / meanWaitS;
  const cpuPerAttestationMs = roundCpuMs / n;
  const busyS = (cpuPerAttestationMs * n * attestationsPerRuntime + tickCpuMs) / 1000;
  return {
    periodS,
    intervalS,
    attestationsPerRuntime,
    attestations: n,
    verdicts,
    roundS,
    roundCpu,
    cpuPerAttestationMs,
    tick,
    tickS,
    tickCpuMs,
    tickRequestsPerRuntime: traffic.requestsPerRuntime,
    tickWrites: traffic.writes,
    idleCores: i.idleCores,
    averageCores: busyS / periodS + i.idleCores,
    checks,
  };
}
