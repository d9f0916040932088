// Issue 14: annotate mode signals N Runtimes (target: 5,000 in under 30 s).
//
// The KCP alone (a real kube-apiserver on etcd; annotate mode never talks to a runtime): KIM's
// Runtime CRD, the three sources and N Runtime CRs as KIM creates them. `rtb controller --mode
// annotate`, compiled and on plain node as the image runs it, is its own process with its
// defaults (concurrency, coalescing 2 s). For each of BENCH_ROUNDS rotations of the pull Secret:
// - from the KCP write until every Runtime carries `force-patch-reconciliation: "true"` (seen by a
//   watch in this process), the controller's CPU per Runtime and its signals, skips and errors
//   from its metrics; the coalescing window is part of the time (it is the product's behaviour);
// - KIM's part: the signal removed from every Runtime (as KIM does after reconciling), untimed;
// - the same-run baseline: the same N merge PATCHes (signal + version stamp) from this process
//   over keep-alive connections at the controller's concurrency, then removed again.
// Prints figures next to the target; asserts nothing.
//
//   npx tsx bench/annotate-scale.ts     BENCH_ANNOTATE=500,5000 BENCH_ROUNDS=2
import { runtimeCrd } from '../src/api/crds.js';
import {
  FORCE_PATCH_RECONCILIATION,
  RUNTIME_GROUP,
  RUNTIME_PLURAL,
  RUNTIME_VERSION,
  type Runtime,
} from '../src/api/runtime.js';
import { SIGNALLED_VERSION_ANNOTATION } from '../src/controller/annotate/signal-decision.js';
import { ControlPlane } from '../src/envtest/control-plane.js';
import { freePort } from '../src/envtest/free-port.js';
import { waitReady } from '../src/envtest/wait-ready.js';
import { applyObjects } from '../src/kube/apply.js';
import { ensureCrds } from '../src/kube/crd.js';
import { runtimeObject } from '../test/support/runtime-object.js';
import { CTB_NAME, KCP_PULL_SECRET, dockerConfig, putSources } from '../test/support/kcp.js';
import { GroupCpuWindow, metricValue } from './support/cpu-groups.js';
import { envIntegers, envNumber, isMain, say as defaultSay } from './support/env.js';
import { FleetTracker } from './support/fleet-tracker.js';
import { KeepAliveClient } from './support/keep-alive-client.js';
import { forEachLimited } from './support/limited.js';
import { counterDelta } from './support/metric-deltas.js';
import { memoryKib } from './support/proc.js';
import { buildChildren, scratchDir, sleep, startNode } from './support/processes.js';

const NS = 'kcp-system';
const RUNTIMES_PATH = `/apis/${RUNTIME_GROUP}/${RUNTIME_VERSION}/namespaces/${NS}/${RUNTIME_PLURAL}`;
const TARGET_S = 30;
/** The controller's default coalescing window (`--coalesce 2s`): part of the signal time. */
const COALESCE_S = 2;

/** One rotation's figures. */
interface Round {
  readonly signalledS: number;
  readonly cpuPerRuntimeMs: number;
  readonly signalled: number;
  readonly skipped: number;
  readonly errors: number;
  readonly baselineS: number;
  readonly baselineCpuPerRuntimeMs: number;
}

const signalOf = (r: Runtime): { signalled: boolean } => ({
  signalled: r.metadata?.annotations?.[FORCE_PATCH_RECONCILIATION] === 'true',
});

/** Merge PATCHes of every Runtime from this process, at `concurrency`; returns the wall time. */
async function patchAll(
  client: KeepAliveClient,
  ids: readonly string[],
  concurrency: number,
  annotations: Record<string, string | null>,
): Promise<number> {
  const t0 = performance.now();
  await forEachLimited(ids, concurrency, async (id) => {
    await client.request(
      'PATCH',
      `${RUNTIMES_PATH}/${id}`,
      { metadata: { annotations } },
      'application/merge-patch+json',
    );
  });
  return performance.now() - t0;
}

/** Runs the benchmark for N Runtimes. */
export async function runAnnotateScale(say: (line: string) => void = defaultSay, n = 500): Promise<Round[]> {
  const scripts = buildChildren(say);
  const scratch = await scratchDir('rtb-annotate-');
  say(`== annotate mode: ${n} Runtimes on one KCP ==`);
  const plane = await ControlPlane.start({ clusters: ['kcp'] });
  const kcp = plane.cluster('kcp');
  const access = kcp.kubeConfig();
  const tracker = new FleetTracker<Runtime, { signalled: boolean }>(
    access,
    RUNTIMES_PATH,
    signalOf,
    'runtimes',
  );
  const client = await KeepAliveClient.create(access, 64);
  let ctl: ReturnType<typeof startNode> | undefined;
  try {
    await ensureCrds(access, [runtimeCrd()]);
    await putSources(kcp, { auth: 'r0' });
    const ids = Array.from({ length: n }, (_, i) => `rt-${String(i).padStart(5, '0')}`);
    const t0 = performance.now();
    await forEachLimited(ids, 32, async (id) => {
      await client.request('POST', RUNTIMES_PATH, runtimeObject(id));
    });
    say(`created ${n} Runtimes in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await tracker.start();

    const port = await freePort();
    ctl = startNode(
      'controller',
      scripts.rtb,
      [
        'controller',
        '--mode',
        'annotate',
        '--kubeconfig',
        kcp.kubeconfigPath,
        '--namespace',
        NS,
        '--pull-secret',
        KCP_PULL_SECRET,
        '--cluster-trust-bundle',
        CTB_NAME,
        '--metrics-host',
        '127.0.0.1',
        '--metrics-port',
        String(port),
        '--log-level',
        'warn',
        // BENCH_CONTROLLER_ARGS: more flags, e.g. `--no-leader-elect` or `--concurrency 20`.
        ...(process.env.BENCH_CONTROLLER_ARGS ?? '').split(' ').filter(Boolean),
      ],
      scratch.dir,
    );
    const metricsUrl = `http://127.0.0.1:${port}/metrics`;
    await waitReady(ctl, `http://127.0.0.1:${port}/readyz`, undefined, 60_000);
    const metrics = async (): Promise<string> => (await fetch(metricsUrl)).text();
    const pid = ctl.pid ?? 0;
    // The first evaluation records the sources without signalling anyone.
    await sleep(3_000);
    const concurrency = Math.max(
      1,
      metricValue(await metrics(), 'controller_runtime_max_concurrent_reconciles', {
        controller: 'annotate-runtimes',
      }) || 10,
    );
    const rssIdle = memoryKib(pid).rss;

    const rounds: Round[] = [];
    for (let round = 1; round <= envNumber('BENCH_ROUNDS', 2); round++) {
      const m0 = await metrics();
      const cpu = new GroupCpuWindow({ controller: [pid] });
      const w0 = performance.now();
      await applyObjects(access, [
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: KCP_PULL_SECRET, namespace: NS },
          type: 'kubernetes.io/dockerconfigjson',
          data: dockerConfig(`r${round}`),
        } as object,
      ]);
      const last = await tracker.until(n, (s) => s.signalled, Math.max(600_000, n * 200));
      const window = cpu.close();
      await sleep(2_000);
      const m1 = await metrics();
      const signalledS = (last - w0) / 1000;
      // KIM's part: the signal consumed.
      await patchAll(client, ids, 32, { [FORCE_PATCH_RECONCILIATION]: null });
      await tracker.until(n, (s) => !s.signalled, 120_000);
      // The baseline: the same writes from here, then consumed again.
      client.disconnect();
      const b0 = process.cpuUsage();
      const baselineMs = await patchAll(client, ids, concurrency, {
        [FORCE_PATCH_RECONCILIATION]: 'true',
        [SIGNALLED_VERSION_ANNOTATION]: `baseline-${round}`,
      });
      const bCpu = process.cpuUsage(b0);
      await patchAll(client, ids, 32, { [FORCE_PATCH_RECONCILIATION]: null });
      await tracker.until(n, (s) => !s.signalled, 120_000);
      const r: Round = {
        signalledS,
        cpuPerRuntimeMs: ((window.cores.controller ?? 0) * window.seconds * 1000) / n,
        signalled: counterDelta(m0, m1, 'rtb_controller_runtimes_signalled_total'),
        skipped: counterDelta(m0, m1, 'rtb_controller_runtimes_skipped_total'),
        errors: counterDelta(m0, m1, 'rtb_controller_signal_errors_total'),
        baselineS: baselineMs / 1000,
        baselineCpuPerRuntimeMs: (bCpu.user + bCpu.system) / 1000 / n,
      };
      rounds.push(r);
      say(
        `round ${round}: every Runtime signalled ${r.signalledS.toFixed(1)} s after the write (target < ${TARGET_S} s, ` +
          `coalescing 2 s included); baseline ${r.baselineS.toFixed(1)} s at concurrency ${concurrency} ` +
          `(controller after its coalescing window ÷ baseline ${((r.signalledS - COALESCE_S) / r.baselineS).toFixed(2)}); controller CPU ${r.cpuPerRuntimeMs.toFixed(2)} ms ` +
          `per Runtime (baseline ${r.baselineCpuPerRuntimeMs.toFixed(2)}); signalled ${r.signalled}, skipped ${r.skipped}, errors ${r.errors}`,
      );
    }
    say(
      `controller VmRSS: ${(rssIdle / 1024).toFixed(0)} MB idle with ${n} Runtimes, ${(memoryKib(pid).rss / 1024).toFixed(0)} MB after`,
    );
    return rounds;
  } finally {
    client.close();
    await tracker.stop();
    await ctl?.stop();
    await plane.stop();
    await scratch.remove();
  }
}

if (isMain(import.meta.url)) {
  for (const n of envIntegers('BENCH_ANNOTATE', [500])) await runAnnotateScale(defaultSay, n);
}
