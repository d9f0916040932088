// Issue 14: one change reaches a fleet of N runtimes; how far one controller replica goes.
//
// The KCP and a pool of P real kube-apiservers (BENCH_POOL, default 16) on one etcd; N runtimes
// (BENCH_FLEET, default 500; e.g. 500,2000,5000), runtime i served by pool server i mod P, each
// with a kubeconfig Secret and a client identity of its own and a RuntimeBootstrapper; the
// controller in direct mode, drift listener on, periodic resync off, in its own process
// (bench/support/controller-child.ts). Measured, in one run per N:
// - onboarding: creating the N CRs until every one is Ready, then its same-run floor: what an
//   install must do at least, from this process (bench/support/fleet-baselines.ts);
// - one rotation of each source (pull Secret, ClusterTrustBundle, ConfigMap): from the KCP write
//   until every CR's status has the new version, with the controller's CPU, requests per runtime,
//   event-loop delay, errors, and drift reports sent to the listener meanwhile (repair p99);
// - after each rotation, the same-run floor: the minimal writes, the changed object written to
//   every runtime plus a status write per CR on the KCP, from this process over keep-alive
//   connections with one TLS context per identity, at the controller's concurrency (controller ÷
//   floor is the figure that carries over to other machines);
// - memory: VmRSS empty, Ready, after the rotations, and V8 heap after a full GC;
// - the periodic resync: one forced pass over every runtime (the safeguard), its CPU averaged over
//   10 minutes with the controller's idle CPU (bench/support/fleet-upkeep.ts); then as it runs by
//   default, with every runtime attesting and one tick (bench/support/attested-resync.ts); and the
//   plain alternative, the KCP reading the metadata of every managed object itself
//   (bench/support/metadata-look-cost.ts), both projected to 5,000 runtimes;
// - memory over more rotations of the pull Secret, up to BENCH_FLEET_ROTATIONS in all (default
//   20): heap after a full GC after each;
// - a restart with everything Ready: time until caught up, and what it sent; then its floor: a
//   new client of every runtime and the serving look's three reads, from this process.
// Prints figures next to the issue's targets; asserts nothing.
//
//
// BENCH_FLEET_REPLICAS=1,3: after onboarding, the rotation of the pull Secret with each replica
// count instead of the phases above (1: one controller as today; more: sharded, a Lease each;
// bench/support/fleet-replicas.ts), both figures printed.
//
// BENCH_FLEET_WAVES=1: after onboarding, instead of the phases above, a change rolled out in waves
// of 1 %, 10 %, 100 % with zero soak, next to one wave of everything and no policy
// (bench/support/fleet-waves.ts): time per wave and in all.
//
// BENCH_RTT_MS (default 0,150: loopback, then 150 ms): every runtime's API server behind a delaying
// TCP proxy of that round trip (bench/support/delay-proxy.ts, in a process of its own), the KCP
// local; the floors go through the same proxies. One run per N and round trip.
//
// BENCH_FLEET_PHASES=rotations: onboarding and the four rotations only (no resync, attestations,
// memory series or restart).
//
//   npm run bench:fleet        BENCH_FLEET=500,2000,5000 BENCH_POOL=16 BENCH_DRIFT_REPORTS=100 BENCH_FLEET_ROTATIONS=20
//                              BENCH_RTT_MS=0,150 BENCH_FLEET_PHASES=all
import { RUNTIME_TLS_IDLE_MS } from '../src/controller/direct/runtime-clients.js';
import { createCertificateAuthority } from '../src/pki/certificate-authority.js';
import { applyObjects } from '../src/kube/apply.js';
import { trustBundleApis } from '../src/kube/trust-bundle-discovery.js';
import { liteFromDocument } from '../src/kube/cluster-access.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CTB_NAME, CTB_SIGNER, KCP_PULL_SECRET, dockerConfig } from '../test/support/kcp.js';
import { seedConfigText } from '../test/support/fixtures.js';
import {
  onboardingFloor,
  restartFloor,
  rotationFloor,
  type FloorContext,
} from './support/fleet-baselines.js';
import { describeCpu, GroupCpuWindow, metricValue, type GroupCpu } from './support/cpu-groups.js';
import { attestedResyncCost } from './support/attested-resync.js';
import { coresAt, metadataLookCost } from './support/metadata-look-cost.js';
import { DriftReporter } from './support/drift-reporter.js';
import { WatcherSecretVersions } from './support/fleet-attestations.js';
import { envIntegers, envNumber, isMain, say as defaultSay } from './support/env.js';
import {
  fleetSummary,
  type FleetFigures,
  type MemoryAfterGc,
  type RotationFigures,
  type Traffic,
} from './support/fleet-summary.js';
import { startIdleLoop, type IdleLoop } from './support/idle-loop.js';
import { startFleet, type Fleet, type FleetModeContext } from './support/fleet-landscape.js';
import type { ControllerProcess } from './support/kcp-bench.js';
import { KeepAliveClient } from './support/keep-alive-client.js';
import { counterDelta, countsDelta, histogramDelta, quantileUpperBound } from './support/metric-deltas.js';
import { memoryKib } from './support/proc.js';
import { buildChildren, scratchDir, sleep } from './support/processes.js';
import { StatusTracker } from './support/status-tracker.js';
import { summarize } from './support/stats.js';
import { FANOUT_QUEUE, untilQueueIdle } from './support/queue-progress.js';
import { resyncCost, rotateRepeatedly } from './support/fleet-upkeep.js';
import { RuntimeIdentities } from './support/runtime-identities.js';
import type { ControllerChildState } from './support/controller-child.js';
import { rotateWithReplicas, type ReplicaRotation } from './support/fleet-replicas.js';
import { rolloutInWaves, type WavesRun } from './support/fleet-waves.js';
import { startWebhookReports, type WebhookReports } from './support/webhook-reports.js';

/** Requests and TLS connections of the controller between two `/state` answers. */
function traffic(fleet: Fleet, s0: ControllerChildState, s1: ControllerChildState): Traffic {
  const kcpPort = String(fleet.kcp.port);
  const sum = (m0: Record<string, number>, m1: Record<string, number>, kcp: boolean): number =>
    Object.entries(countsDelta(m0, m1))
      .filter(([port]) => (port === kcpPort) === kcp)
      .reduce((a, [, v]) => a + v, 0);
  const byPath = countsDelta(s0.requestPaths, s1.requestPaths);
  const writes = (side: string): number =>
    Object.entries(byPath)
      .filter(([k]) => k.startsWith(`${side} `) && !k.startsWith(`${side} GET `))
      .reduce((a, [, v]) => a + v, 0);
  return {
    runtime: sum(s0.requests, s1.requests, false),
    kcp: sum(s0.requests, s1.requests, true),
    runtimeTls: sum(s0.tlsConnections, s1.tlsConnections, false),
    kcpTls: sum(s0.tlsConnections, s1.tlsConnections, true),
    runtimeWrites: writes('runtime'),
    kcpWrites: writes('kcp'),
    byPath,
  };
}

function cpuWindow(fleet: Fleet, controllerPids: readonly number[]): GroupCpuWindow {
  return new GroupCpuWindow({
    controller: [...controllerPids],
    'pool apiservers': fleet.poolPids,
    'kcp apiserver': [fleet.kcpPid],
    etcd: [fleet.etcdPid],
  });
}

/**
 * Each CR's Ready after `t0` (median, p90, the last) and how long those seen Installing stayed so,
 * from when each was first seen Installing and first seen Ready (`performance.now()`).
 */
function readiness(
  phases: ReadonlyMap<string, { readonly installing?: number; readonly ready?: number }>,
  t0: number,
): Pick<FleetFigures['onboarding'], 'readyAfter' | 'installing'> {
  const ready: number[] = [];
  let installing = 0;
  let longest = 0;
  for (const p of phases.values()) {
    if (p.ready === undefined) continue;
    ready.push(p.ready - t0);
    if (p.installing === undefined || p.installing > p.ready) continue;
    installing++;
    longest = Math.max(longest, p.ready - p.installing);
  }
  const r = summarize(ready);
  return {
    readyAfter: { medianS: r.p50 / 1000, p90S: r.p90 / 1000, lastS: r.max / 1000 },
    installing: { count: installing, longestS: longest / 1000 },
  };
}

const controllerCpuMs = (cpu: GroupCpu): number => (cpu.cores.controller ?? 0) * cpu.seconds * 1000;

/** Writes a new content of one source on the KCP. */
async function writeSource(fleet: Fleet, source: string, label: string): Promise<void> {
  if (source === 'pull Secret') {
    await applyObjects(fleet.kcpAccess, [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: KCP_PULL_SECRET, namespace: 'kcp-system' },
        type: 'kubernetes.io/dockerconfigjson',
        data: dockerConfig(label),
      } as object,
    ]);
  } else if (source === 'ClusterTrustBundle') {
    const ca = await createCertificateAuthority({ commonName: `landscape CA ${label}` });
    const api = await trustBundleApis.get(fleet.kcpAccess);
    if (!api.served) throw new Error(`the KCP serves no ClusterTrustBundle API: ${api.found}`);
    await applyObjects(fleet.kcpAccess, [
      {
        apiVersion: api.apiVersion,
        kind: 'ClusterTrustBundle',
        metadata: { name: CTB_NAME },
        spec: { signerName: CTB_SIGNER, trustBundle: ca.certPem },
      } as object,
    ]);
  } else {
    const config = JSON.parse(seedConfigText()) as { overrides: Record<string, string> };
    config.overrides['bench.example'] = `mirror-${label}.example.com`;
    await applyObjects(fleet.kcpAccess, [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'rt-bootstrapper-config', namespace: 'kcp-system' },
        data: { 'rt-bootstrapper-config.json': JSON.stringify(config, null, 2) },
      } as object,
    ]);
  }
}

/** One rotation of `source`, with drift reports sent while it runs. */
async function rotate(
  fleet: Fleet,
  idle: IdleLoop,
  ctl: ControllerProcess,
  tracker: StatusTracker,
  reporter: DriftReporter | undefined,
  source: string,
  label: string,
): Promise<Omit<RotationFigures, 'baseline'>> {
  const n = fleet.ids.length;
  const s0 = await ctl.state();
  const m0 = await ctl.metrics();
  await ctl.resetEventLoop();
  await idle.reset();
  // BENCH_PROFILE=<dir>: a CPU profile of the controller over onboarding and each rotation, written there.
  const profileDir = process.env.BENCH_PROFILE;
  if (profileDir) await ctl.profileStart();
  const cpu = cpuWindow(fleet, [ctl.pid]);
  // The proxies' loop: a late turn there releases the chunks they hold together.
  await fleet.proxies?.loop.reset();
  const t0 = performance.now();
  await writeSource(fleet, source, label);
  // With `reporter`: drift reports at about 20 a second while the rotation runs.
  const reports = reporter ? envNumber('BENCH_DRIFT_REPORTS', 100) : 0;
  const rotation = { done: false };
  const answers: number[] = [];
  const reporting = (async () => {
    for (let i = 0; i < reports && !rotation.done; i++) {
      const id = fleet.ids[Math.floor(Math.random() * n)] ?? '';
      answers.push((await reporter?.report(id).catch(() => 0)) ?? 0);
      await sleep(50);
    }
  })();
  const last = await tracker.until(
    n,
    (s) => s.appliedVersion !== undefined && s.appliedVersion !== s0.version && s.state === 'Ready',
    600_000,
  );
  rotation.done = true;
  const statusMs = last - t0;
  const window = cpu.close();
  const proxyLoop = await fleet.proxies?.loop.state();
  if (profileDir) {
    const file = join(profileDir, `fleet-${n}-${label}.cpuprofile`);
    await writeFile(file, await ctl.profileStop());
  }
  await reporting;
  await sleep(1_500); // repairs of the last reports, and their confirmations
  const s1 = await ctl.state();
  const m1 = await ctl.metrics();
  const versions = new Set(tracker.all().map((s) => s.appliedVersion));
  if (versions.size !== 1 || !versions.has(s1.version))
    throw new Error(`CRs report versions ${[...versions].join(', ')}; the controller holds ${s1.version}`);
  const repair = histogramDelta(m0, m1, 'rtb_drift_repair_seconds');
  const idleLoop = await idle.state();
  return {
    source: reporter ? `${source}, with drift reports meanwhile` : source,
    statusMs,
    cpu: window,
    controllerCpuPerRuntimeMs: controllerCpuMs(window) / n,
    traffic: traffic(fleet, s0, s1),
    eventLoopP99Ms: s1.eventLoopP99Ms,
    eventLoopMaxMs: s1.eventLoopMaxMs,
    gc: { count: s1.gcCount, totalMs: s1.gcPauseTotalMs, maxMs: s1.gcPauseMaxMs },
    idleLoopP99Ms: idleLoop.p99Ms,
    idleLoopMaxMs: idleLoop.maxMs,
    proxyLoopP99Ms: proxyLoop?.p99Ms,
    openFds: s1.openFds,
    errors:
      counterDelta(m0, m1, 'rtb_runtime_sync_errors_total') +
      counterDelta(m0, m1, 'workqueue_retries_total', FANOUT_QUEUE),
    reconciles: counterDelta(m0, m1, 'workqueue_work_duration_seconds_count', FANOUT_QUEUE),
    drift: {
      sent: answers.length,
      accepted: answers.filter((a) => a >= 200 && a < 300).length,
      repaired: repair.count,
      p99UpperS: quantileUpperBound(repair, 0.99),
      overOneSecond: repair.count - (repair.buckets.find((b) => b.le === 1)?.count ?? 0),
      meanS: repair.count > 0 ? repair.sumSeconds / repair.count : Number.NaN,
    },
  };
}

const gcOf = (s: ControllerChildState): MemoryAfterGc => ({
  rss: s.rssKib,
  heap: s.heapUsedKib,
  heapTotal: s.heapTotalKib,
  external: s.externalKib,
});

/** Runs the benchmark for one N at one round trip to the runtimes (0: loopback). */
export async function runFleetScale(
  say: (line: string) => void = defaultSay,
  n = 500,
  rttMs = 0,
): Promise<FleetFigures | readonly ReplicaRotation[] | readonly WavesRun[]> {
  const replicaCounts = replicasToCompare();
  const waves = process.env.BENCH_FLEET_WAVES === '1';
  const scripts = buildChildren(say);
  const scratch = await scratchDir('rtb-fleet-');
  const poolSize = Math.min(envNumber('BENCH_POOL', 16), n);
  const concurrencyEnv = process.env.BENCH_CONCURRENCY;
  say(`== fleet scale: ${n} runtimes on ${poolSize} kube-apiservers ==`);
  const fleet = await startFleet({
    runtimes: n,
    pool: poolSize,
    scripts,
    dir: scratch.dir,
    say,
    ...(concurrencyEnv ? { concurrency: Number(concurrencyEnv) } : {}),
    rttMs,
  });
  let tracker = new StatusTracker(fleet.kcpAccess);
  const idle = await startIdleLoop(scripts.idleLoopChild, scratch.dir);
  let ctl: ControllerProcess | undefined;
  const clients = new Map<string, KeepAliveClient>();
  let reporter: DriftReporter | undefined;
  let kcpClient: KeepAliveClient | undefined;
  let reports: WebhookReports | undefined;
  try {
    // What the runtimes' webhooks would report (no webhook runs here): the controller reads it as
    // on a real fleet, and stops looking once it has.
    reports = await startWebhookReports(fleet.pool);
    ctl = await fleet.startController('controller');
    await sleep(1_000);
    const rssEmpty = memoryKib(ctl.pid).rss;
    await ctl.gc();
    const gcEmpty = await ctl.state();
    await tracker.start();
    const stateOf = await ctl.state();
    // The controller's default unless set: read back from its metrics.
    const concurrency = metricValue(await ctl.metrics(), 'controller_runtime_max_concurrent_reconciles', {
      controller: FANOUT_QUEUE.name,
    });

    // Onboarding.
    await ctl.resetEventLoop();
    await idle.loop.reset();
    const m0 = await ctl.metrics();
    const profileDir = process.env.BENCH_PROFILE;
    if (profileDir) await ctl.profileStart();
    const cpu = cpuWindow(fleet, [ctl.pid]);
    // When each CR was first seen Installing and first seen Ready.
    const phases = new Map<string, { installing?: number; ready?: number }>();
    const unlisten = tracker.listen((name, st) => {
      const p = phases.get(name) ?? {};
      if (st.state === 'Installing') p.installing ??= st.at;
      if (st.state === 'Ready') p.ready ??= st.at;
      phases.set(name, p);
    });
    const t0 = performance.now();
    await fleet.createBootstrappers();
    const createSeconds = (performance.now() - t0) / 1000;
    say(`created ${n} RuntimeBootstrappers in ${createSeconds.toFixed(1)} s`);
    const kubelet = setInterval(() => {
      if (tracker.count((s) => s.state === 'Installing') > 0) void fleet.markAvailable();
    }, 1_000);
    let readyAt: number;
    try {
      readyAt = await tracker.until(n, (s) => s.state === 'Ready', Math.max(600_000, n * 600));
    } finally {
      clearInterval(kubelet);
      unlisten();
    }
    const onboardCpu = cpu.close();
    if (profileDir)
      await writeFile(join(profileDir, `fleet-${n}-onboarding.cpuprofile`), await ctl.profileStop());
    await sleep(1_000);
    const s1 = await ctl.state();
    const m1 = await ctl.metrics();
    const onboarding = {
      createSeconds,
      readySeconds: (readyAt - t0) / 1000,
      controllerCpuPerRuntimeMs: controllerCpuMs(onboardCpu) / n,
      cpu: onboardCpu,
      traffic: traffic(fleet, stateOf, s1),
      reconciles: counterDelta(m0, m1, 'workqueue_work_duration_seconds_count', FANOUT_QUEUE),
      errors:
        counterDelta(m0, m1, 'rtb_runtime_sync_errors_total') +
        counterDelta(m0, m1, 'workqueue_retries_total', FANOUT_QUEUE),
      eventLoopP99Ms: s1.eventLoopP99Ms,
      eventLoopMaxMs: s1.eventLoopMaxMs,
      idleLoopP99Ms: (await idle.loop.state()).p99Ms,
      ...readiness(phases, t0),
    };
    say(
      `every RuntimeBootstrapper Ready ${onboarding.readySeconds.toFixed(1)} s after the first was created`,
    );
    await sleep(6_000); // idle connections close (5 s)
    // The modes that replace the phases below: each starts controllers of its own.
    const mode: FleetModeContext = {
      fleet,
      tracker,
      writeSource: (label: string) => writeSource(fleet, 'pull Secret', label),
      cpuWindow: (pids: readonly number[]) => cpuWindow(fleet, pids),
      say,
    };
    if (waves) {
      await ctl.proc.stop();
      ctl = undefined;
      return await rolloutInWaves(mode);
    }
    if (replicaCounts !== undefined) {
      await ctl.proc.stop();
      ctl = undefined;
      const results: ReplicaRotation[] = [];
      for (const k of replicaCounts) {
        results.push(await rotateWithReplicas(mode, k, `replicas-${k}`));
        await sleep(6_000);
      }
      for (const r of results)
        say(
          `${n} runtimes, ${r.replicas} replica(s): rotation ${(r.statusMs / 1000).toFixed(1)} s, ` +
            `controllers' CPU ${r.controllerCpuPerRuntimeMs.toFixed(1)} ms per runtime (${r.owned.join(' + ')})`,
        );
      return results;
    }
    const rssReady = memoryKib(ctl.pid).rss;
    await ctl.gc();
    const gcReady = await ctl.state();
    kcpClient = await KeepAliveClient.create(fleet.kcp.kubeConfig(), Math.max(concurrency, 1));
    const floors: FloorContext = {
      fleet,
      kcpClient,
      concurrency: Math.max(concurrency, 1),
      dir: scratch.dir,
      cpuWindow: () => cpuWindow(fleet, ctl ? [ctl.pid] : []),
    };
    // Without the benchmark's own watch: it would parse the floor's status writes on its CPU.
    await tracker.stop();
    const onboardingFloorFigures = await onboardingFloor(floors, fleet.controllerConfig.release);
    tracker = new StatusTracker(fleet.kcpAccess);
    await tracker.start();
    say(
      `onboarding floor: ${(onboardingFloorFigures.ms / 1000).toFixed(1)} s, ` +
        `${onboardingFloorFigures.cpuPerRuntimeMs.toFixed(1)} ms CPU per runtime`,
    );
    await sleep(6_000);

    // Rotations, each followed by the baseline.
    for (const id of fleet.ids) {
      const text = fleet.kubeconfigs.get(id) ?? '';
      const access = liteFromDocument(parse(text), scratch.dir);
      if (!access) throw new Error(`the kubeconfig of ${id} is not a plain one`);
      clients.set(id, await KeepAliveClient.create(access, 4));
    }
    // Like the controller's, as if last used when onboarding ended.
    let floorUsedAt = readyAt;
    const listenerPort = fleet.controllerConfig.drift?.listenerPort ?? 0;
    const identities = await RuntimeIdentities.issue(fleet.kcpAccess, fleet.ids);
    reporter = new DriftReporter(identities, listenerPort);
    const rotations: RotationFigures[] = [];
    let round = 0;
    // One rotation per source, then one more of the pull Secret with drift reports meanwhile
    // (their repairs and forced passes would blur the requests a rotation costs).
    for (const [source, drift] of [
      ['pull Secret', false],
      ['ClusterTrustBundle', false],
      ['ConfigMap', false],
      ['pull Secret', true],
    ] as const) {
      round++;
      const r = await rotate(
        fleet,
        idle.loop,
        ctl,
        tracker,
        drift ? reporter : undefined,
        source,
        `r${round}`,
      );
      say(
        `rotation of the ${source}${drift ? ' with drift reports' : ''}: every status in ${(r.statusMs / 1000).toFixed(1)} s, ` +
          `controller CPU ${r.controllerCpuPerRuntimeMs.toFixed(1)} ms per runtime, ` +
          `${(r.traffic.runtime / n).toFixed(2)} requests (${(r.traffic.runtimeWrites / n).toFixed(2)} writes) per runtime, errors ${r.errors}`,
      );
      await sleep(6_000);
      // Without the benchmark's own watch: it would parse the baseline's status writes on its CPU.
      await tracker.stop();
      // The controller lets a runtime's TLS context go after RUNTIME_TLS_IDLE_MS unused: its floor
      // makes the contexts again when its own clients were idle as long.
      const cold = performance.now() - floorUsedAt > RUNTIME_TLS_IDLE_MS;
      const b = await rotationFloor(floors, clients, `r${round}`, source, cold);
      floorUsedAt = performance.now();
      tracker = new StatusTracker(fleet.kcpAccess);
      await tracker.start();
      say(
        `baseline: ${(b.ms / 1000).toFixed(1)} s, ${b.cpuPerRuntimeMs.toFixed(1)} ms CPU per runtime, ` +
          `TLS contexts ${cold ? 'made again (cold)' : 'kept (warm)'}; CPU: ${describeCpu(b.cpu)}`,
      );
      rotations.push({ ...r, baseline: b });
      await sleep(6_000);
    }
    const rssAfter = memoryKib(ctl.pid).rss;
    await ctl.gc();
    const gcAfter = await ctl.state();
    const memory = {
      rssEmpty,
      rssReady,
      rssAfter,
      gcEmpty: gcOf(gcEmpty),
      gcReady: gcOf(gcReady),
      gcAfter: gcOf(gcAfter),
    };
    const base = {
      runtimes: n,
      pool: poolSize,
      concurrency,
      rttMs: fleet.rttMs,
      startSeconds: fleet.startSeconds,
      onboarding: { ...onboarding, floor: onboardingFloorFigures },
      rotations,
      memory,
      apiserverRss: memoryKib(fleet.poolPids[0] ?? 0).rss,
    };
    // BENCH_FLEET_PHASES=rotations: onboarding and the rotations only (a shorter run).
    if (process.env.BENCH_FLEET_PHASES === 'rotations') {
      for (const line of fleetSummary(base)) say(line);
      return base;
    }

    // The periodic resync's cost, then memory over more rotations (BENCH_FLEET_ROTATIONS in all).
    const upkeep: FleetModeContext = { ...mode, tracker };
    const watcherSecrets = await WatcherSecretVersions.start(fleet.pool);
    const resync = await resyncCost(upkeep, ctl).catch((error: unknown) => {
      watcherSecrets.stop();
      throw error;
    });
    say(
      `forced resync pass: ${resync.passS.toFixed(1)} s, ${resync.cpuPerRuntimeMs.toFixed(1)} ms CPU per runtime; ` +
        `${(resync.averageCores * 100).toFixed(1)} % of a core averaged over ${resync.periodS} s`,
    );
    const attested = await attestedResyncCost(upkeep, ctl, {
      identities,
      listenerPort,
      watcherSecrets,
      idleCores: resync.idleCores,
    }).finally(() => {
      // Until the attestations were measured: a pass they bring writes the drift Secret again.
      watcherSecrets.stop();
    });
    say(
      `attested resync: ${attested.cpuPerAttestationMs.toFixed(2)} ms CPU per attestation ` +
        `(${attested.verdicts.inSync} in sync, ${attested.verdicts.outOfSync} not, ${attested.verdicts.failed} failed); ` +
        `tick forced ${attested.tick.forced}, skipped ${attested.tick.skipped}, ${(attested.tickCpuMs / 1000).toFixed(1)} s CPU; ` +
        `${(attested.averageCores * 100).toFixed(1)} % of a core averaged over ${attested.periodS} s`,
    );
    const looks = await metadataLookCost(upkeep, ctl, attested.checks);
    for (const m of looks.modes)
      say(
        `metadata look (${m.mode}): ${m.requestsPerRuntime.toFixed(1)} requests per runtime ` +
          `(${m.sentPerRuntime.toFixed(1)} sent), ${m.tlsPerRuntime.toFixed(2)} new TLS connections; ` +
          `pass of ${n} at 16 at once ${m.passS.toFixed(1)} s, ${m.cpuPerLookMs.toFixed(2)} ms CPU per runtime; ` +
          `one at a time ${m.serialColdMs.toFixed(2)} ms cold, ${m.serialWarmMs.toFixed(2)} ms warm; ` +
          `${m.differing} objects differing, ${m.failed} failed`,
      );
    // Per runtime per period: a period's attestations and the tick's share, or one cold look.
    const attestedMs =
      attested.cpuPerAttestationMs * attested.attestationsPerRuntime + attested.tickCpuMs / n;
    const at5000 = (ms: number): string => `${(coresAt(5_000, ms, attested.periodS) * 100).toFixed(1)} %`;
    say(
      `at 5,000 runtimes, every ${attested.periodS} s, from this run's per-unit figures (idle not included: ` +
        `${(resync.idleCores * 100).toFixed(2)} % of a core at ${n}): attestations ${at5000(attestedMs)} ` +
        `(${attestedMs.toFixed(2)} ms per runtime per period); ` +
        looks.modes
          .map(
            (m) => `metadata look by ${m.mode} ${at5000(m.cpuPerLookMs)} (${m.cpuPerLookMs.toFixed(2)} ms)`,
          )
          .join(', ') +
        `; record: ${looks.objectsPerRuntime} objects in ${looks.listsPerRuntime} kinds × namespaces`,
    );
    const memorySeries = await rotateRepeatedly(
      upkeep,
      ctl,
      Math.max(0, envNumber('BENCH_FLEET_ROTATIONS', 20) - rotations.length),
    );

    // A restart with everything Ready.
    await ctl.proc.stop();
    await idle.loop.reset();
    const tr = performance.now();
    ctl = await fleet.startController('controller-restart');
    const startedS = (performance.now() - tr) / 1000;
    await untilQueueIdle(ctl, n, 600_000);
    const caughtUpS = (performance.now() - tr) / 1000;
    const sr = await ctl.state();
    const zero: ControllerChildState = { ...sr, requests: {}, tlsConnections: {}, requestPaths: {} };
    const restartTraffic = traffic(fleet, zero, sr);
    const idleDuringRestart = (await idle.loop.state()).p99Ms;
    say(
      `restart: ready after ${startedS.toFixed(1)} s, caught up after ${caughtUpS.toFixed(1)} s; ` +
        `writes ${restartTraffic.runtimeWrites} to runtimes, ${restartTraffic.kcpWrites} to the KCP`,
    );
    await sleep(6_000);
    const restartFloorFigures = await restartFloor(floors);
    say(
      `restart floor: ${(restartFloorFigures.ms / 1000).toFixed(1)} s, ` +
        `${restartFloorFigures.cpuPerRuntimeMs.toFixed(1)} ms CPU per runtime`,
    );
    const restart = {
      startedS,
      caughtUpS,
      traffic: restartTraffic,
      eventLoopP99Ms: sr.eventLoopP99Ms,
      idleLoopP99Ms: idleDuringRestart,
      floor: restartFloorFigures,
    };
    const figures: FleetFigures = { ...base, resync, attested, memorySeries, restart };
    for (const line of fleetSummary(figures)) say(line);
    return figures;
  } finally {
    await reports?.stop();
    reporter?.close();
    kcpClient?.close();
    for (const c of clients.values()) c.close();
    await tracker.stop();
    await idle.stop();
    await ctl?.proc.stop();
    await fleet.stop();
    await scratch.remove();
  }
}

/** BENCH_FLEET_REPLICAS: the replica counts to compare (undefined: the full single-replica run). */
function replicasToCompare(): readonly number[] | undefined {
  const counts = envIntegers('BENCH_FLEET_REPLICAS', []);
  return counts.length > 0 ? counts : undefined;
}

if (isMain(import.meta.url)) {
  for (const n of envIntegers('BENCH_FLEET', [500]))
    for (const rttMs of envIntegers('BENCH_RTT_MS', [0, 150], 0)) await runFleetScale(defaultSay, n, rttMs);
}
