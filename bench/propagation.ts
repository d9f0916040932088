// Issue 5: propagation of one pull-Secret rotation to N runtimes on real API servers.
//
// One KCP and N runtime clusters (kube-apiservers on one etcd), the controller in direct mode in
// its own process (bench/support/controller-child.ts), every RuntimeBootstrapper Ready. Then the
// KCP's pull Secret is rotated ROTATIONS times; each time, a watch on every runtime's
// `kyma-system/registry-credentials` times the arrival of the new Secret (its content version,
// annotation `rt-bootstrapper.kyma-project.io/content-version`), from the moment the rotation is written.
// Baselines in the same run: N sequential GETs of that Secret, and writing what the controller
// writes for the set (the namespace, a trust bundle, a Secret and a ConfigMap, under other
// names) to every runtime from this process, with the product's apply function and over
// keep-alive connections, at the same concurrency. Prints figures (with the machine's CPU use by
// group); asserts nothing.
//
//   npx tsx bench/propagation.ts       BENCH_RUNTIMES=10,20 BENCH_ROTATIONS=5 BENCH_CONCURRENCY=16
import { CoreV1Api, type KubernetesObject, type V1Secret } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { freemem, totalmem } from 'node:os';
import { CONTENT_VERSION_ANNOTATION } from '../src/api/set-version.js';
import { applyObjects } from '../src/kube/apply.js';
import { kubeRequest } from '../src/kube/kube-request.js';
import { trustBundleApis } from '../src/kube/trust-bundle-discovery.js';
import { CTB_NAME, KCP_PULL_SECRET, dockerConfig } from '../test/support/kcp.js';
import { describeCpu, GroupCpuWindow, metricValue, type GroupCpu } from './support/cpu-groups.js';
import { envIntegers, envNumber, isMain, say as defaultSay } from './support/env.js';
import { startKcpBench, type KcpBench } from './support/kcp-bench.js';
import { KeepAliveClient } from './support/keep-alive-client.js';
import { forEachLimited } from './support/limited.js';
import { applyKeepAlive, baselineObjects } from './support/baseline-writes.js';
import { ObjectWatch } from './support/object-watch.js';
import { memoryKib } from './support/proc.js';
import { buildChildren, scratchDir, sleep } from './support/processes.js';
import { mb, median } from './support/stats.js';

/** Direct mode's defaults (src/controller/direct/direct-mode.ts), used unless overridden. */
const DEFAULT_CONCURRENCY = 16;
const DEFAULT_COALESCE_MS = 500;
const SECRETS = '/api/v1/namespaces/kyma-system/secrets';

/** One rotation. */
export interface RotationFigures {
  /** From issuing the KCP write until the first / last runtime's watch saw the new version. */
  readonly firstMs: number;
  readonly lastMs: number;
  /** The KCP write itself. */
  readonly writeMs: number;
  /** From issuing the write until the controller logged the fan-out (watch + coalescing + hashing). */
  readonly fanOutMs: number | undefined;
  /** From the write until every CR's status carried the new version. */
  readonly statusMs: number;
  readonly cpu: GroupCpu;
  /** Per runtime, in this rotation: HTTPS requests and new TLS connections from the controller. */
  readonly requestsPerRuntime: number;
  readonly tlsPerRuntime: number;
  /** Requests to the KCP's API server in this rotation. */
  readonly kcpRequests: number;
  /** Mean work-queue handler time per runtime reconcile. */
  readonly reconcileMeanMs: number;
  readonly reconciles: number;
  readonly errors: number;
  /** Requests of this rotation by `kcp|runtime METHOD path`, summed over all runtimes. */
  readonly paths: Readonly<Record<string, number>>;
}

/** One baseline round: done from this process. */
export interface BaselineFigures {
  /** N sequential GETs of the Secret, one per runtime, with client-node (a TLS handshake each). */
  readonly getsClientNodeMs: number;
  /** The same over keep-alive connections (node:https global agent, warm). */
  readonly getsKeepAliveMs: number;
  /** The namespace and the three objects applied in order on every runtime, `concurrency` runtimes at a time, with the product's applyObjects (client-node). */
  readonly writeClientNodeMs: number;
  /** The same as raw server-side-apply PATCHes over keep-alive connections. */
  readonly writeKeepAliveMs: number;
  /** Mean time of one runtime's three applies within the write rounds. */
  readonly perRuntimeClientNodeMs: number;
  readonly perRuntimeKeepAliveMs: number;
  /** CPU of this process per runtime during those writes (ms). */
  readonly cpuPerRuntimeClientNodeMs: number;
  readonly cpuPerRuntimeKeepAliveMs: number;
}

export interface PropagationFigures {
  readonly runtimes: number;
  readonly concurrency: number;
  readonly coalesceMs: number;
  readonly startSeconds: number;
  readonly readySeconds: number;
  readonly rotations: readonly RotationFigures[];
  readonly baselines: readonly BaselineFigures[];
  /** Controller VmRSS (KiB): when started (no runtimes yet), all Ready and idle 5 s, 5 s after the rotations; peak. */
  readonly rssAtStart: number;
  readonly rssReady: number;
  readonly rssAfter: number;
  readonly rssPeak: number;
  /** After a forced full GC: VmRSS and V8 heap used (KiB), with the runtimes Ready and after the rotations. */
  readonly gcReady: { readonly rss: number; readonly heap: number; readonly external: number };
  readonly gcAfter: { readonly rss: number; readonly heap: number; readonly external: number };
  /** Mean VmRSS of one runtime kube-apiserver, and of etcd, at the end (KiB). */
  readonly apiserverRss: number;
  readonly etcdRss: number;
  readonly warnings: number;
  readonly errorLines: readonly string[];
}

async function runBaseline(
  bench: KcpBench,
  clients: readonly KeepAliveClient[],
  round: number,
  concurrency: number,
): Promise<BaselineFigures> {
  const kcs = bench.runtimes.map((rt) => rt.kubeConfig());
  let t = performance.now();
  for (const kc of kcs) {
    await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: 'registry-credentials', namespace: 'kyma-system' });
  }
  const getsClientNodeMs = performance.now() - t;
  // The keep-alive connections are warm (opened before the first round): requests, not handshakes.
  t = performance.now();
  for (const c of clients) await c.request('GET', `${SECRETS}/registry-credentials`);
  const getsKeepAliveMs = performance.now() - t;

  // Every cluster of the bench runs one minor: the KCP's version is the runtimes'.
  const kcpAccess = bench.kcp.kubeConfig();
  const api = await trustBundleApis.get(kcpAccess);
  if (!api.served) throw new Error(`the KCP serves no ClusterTrustBundle API: ${api.found}`);
  const ctb = await kubeRequest<{ spec: unknown }>(kcpAccess, {
    method: 'GET',
    path: `${api.path}/${encodeURIComponent(CTB_NAME)}`,
  });
  const timed = async <C>(
    targets: readonly C[],
    apply: (target: C) => Promise<unknown>,
  ): Promise<{ all: number; each: number; cpu: number }> => {
    const each: number[] = [];
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await forEachLimited(targets, concurrency, async (target) => {
      const s = performance.now();
      await apply(target);
      each.push(performance.now() - s);
    });
    const all = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return {
      all,
      each: each.reduce((a, b) => a + b, 0) / each.length,
      cpu: (cpu.user + cpu.system) / 1000 / targets.length,
    };
  };
  const clientNode = await timed(kcs, (kc) =>
    applyObjects(kc, baselineObjects(round * 2, ctb.spec, api.apiVersion)),
  );
  const keepAlive = await timed(clients, (c) =>
    applyKeepAlive(c, baselineObjects(round * 2 + 1, ctb.spec, api.apiVersion)),
  );
  return {
    getsClientNodeMs,
    getsKeepAliveMs,
    writeClientNodeMs: clientNode.all,
    writeKeepAliveMs: keepAlive.all,
    perRuntimeClientNodeMs: clientNode.each,
    perRuntimeKeepAliveMs: keepAlive.each,
    cpuPerRuntimeClientNodeMs: clientNode.cpu,
    cpuPerRuntimeKeepAliveMs: keepAlive.cpu,
  };
}

interface LogLine {
  readonly time?: string;
  readonly level?: string;
  readonly msg?: string;
  readonly err?: { message?: string };
}

function readLog(path: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const text of readFileSync(path, 'utf8').split('\n')) {
    if (!text.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(text) as LogLine);
    } catch {
      // not a log record
    }
  }
  return lines;
}

const sumPorts = (m: Record<string, number>, ports: readonly number[]): number =>
  ports.reduce((a, p) => a + (m[String(p)] ?? 0), 0);

async function rotate(
  bench: KcpBench,
  watches: readonly ObjectWatch<V1Secret>[],
  label: string,
): Promise<RotationFigures> {
  const ctl = bench.controller;
  const runtimePorts = bench.runtimes.map((r) => r.port);
  const before = await ctl.state();
  const metrics0 = await ctl.metrics();
  const marks = watches.map((w) => w.mark());
  const cpu = new GroupCpuWindow({
    controller: [ctl.pid],
    'runtime apiservers': bench.apiserverPids.filter((p) => p !== bench.kcp.pid),
    'kcp apiserver': bench.kcp.pid !== undefined ? [bench.kcp.pid] : [],
    etcd: [bench.etcdPid],
  });
  const t0 = performance.now();
  const epoch0 = performance.timeOrigin + t0;
  await applyObjects(bench.kcp.kubeConfig(), [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: KCP_PULL_SECRET, namespace: 'kcp-system' },
      type: 'kubernetes.io/dockerconfigjson',
      data: dockerConfig(label),
    } as KubernetesObject,
  ]);
  const writeMs = performance.now() - t0;
  const wanted = dockerConfig(label)['.dockerconfigjson'];
  const arrivals = await Promise.all(
    watches.map(async (w, i) => {
      const hit = await w.waitFor(
        marks[i] ?? 0,
        (e) => {
          const v = e.object.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION];
          return v !== undefined && e.object.data?.['.dockerconfigjson'] === wanted;
        },
        120_000,
      );
      if (!hit) throw new Error(`${bench.runtimes[i]?.name ?? '?'} never got the rotation ${label}`);
      return hit.event;
    }),
  );
  const versions = new Set(arrivals.map((e) => e.object.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION]));
  const after = await ctl.state();
  if (versions.size !== 1 || after.version === before.version)
    throw new Error(
      `runtimes got Secrets of content versions ${[...versions].join(', ')}; the controller holds ${after.version}`,
    );
  // The rotation is over for the controller once every status says so.
  for (;;) {
    const rbs = await bench.listBootstrappers();
    if (rbs.every((rb) => rb.status?.appliedVersion === after.version && rb.status.state === 'Ready')) break;
    if (performance.now() - t0 > 120_000) throw new Error('the statuses never caught up');
    await sleep(20);
  }
  const statusMs = performance.now() - t0;
  const window = cpu.close();
  const times = arrivals.map((e) => e.at - t0);
  const fanOut = readLog(ctl.proc.logPath).find(
    (l) =>
      l.msg === 'source set changed; fanning out' && l.time !== undefined && Date.parse(l.time) >= epoch0 - 1,
  );
  // Counters are cumulative in the child: the difference is this rotation's.
  await sleep(200);
  const metrics1 = await ctl.metrics();
  const final = await ctl.state();
  const delta = (name: string, labels: Record<string, string> = {}): number =>
    metricValue(metrics1, name, labels) - metricValue(metrics0, name, labels);
  const q = { name: 'runtimebootstrapper' };
  const reconciles = delta('workqueue_work_duration_seconds_count', q);
  return {
    firstMs: Math.min(...times),
    lastMs: Math.max(...times),
    writeMs,
    fanOutMs: fanOut?.time !== undefined ? Date.parse(fanOut.time) - epoch0 : undefined,
    statusMs,
    cpu: window,
    requestsPerRuntime:
      (sumPorts(final.requests, runtimePorts) - sumPorts(before.requests, runtimePorts)) /
      runtimePorts.length,
    tlsPerRuntime:
      (sumPorts(final.tlsConnections, runtimePorts) - sumPorts(before.tlsConnections, runtimePorts)) /
      runtimePorts.length,
    kcpRequests: sumPorts(final.requests, [bench.kcp.port]) - sumPorts(before.requests, [bench.kcp.port]),
    reconcileMeanMs:
      reconciles > 0 ? (delta('workqueue_work_duration_seconds_sum', q) * 1000) / reconciles : 0,
    reconciles,
    errors: delta('rtb_runtime_sync_errors_total') + delta('workqueue_retries_total', q),
    paths: Object.fromEntries(
      Object.entries(final.requestPaths)
        .map(([k, v]) => [k, v - (before.requestPaths[k] ?? 0)] as const)
        .filter(([, v]) => v > 0),
    ),
  };
}

/** The controller's memory after a forced full collection. */
async function collected(bench: KcpBench): Promise<{ rss: number; heap: number; external: number }> {
  await bench.controller.gc();
  const s = await bench.controller.state();
  return { rss: s.rssKib, heap: s.heapUsedKib, external: s.externalKib };
}

/** Runs the benchmark for one N. */
export async function runPropagation(
  say: (line: string) => void = defaultSay,
  runtimes = 10,
): Promise<PropagationFigures> {
  if (!Number.isInteger(runtimes) || runtimes < 1)
    throw new Error(`the number of runtimes must be a positive integer, got ${runtimes}`);
  const rotations = envNumber('BENCH_ROTATIONS', 5);
  const concurrency = envNumber('BENCH_CONCURRENCY', DEFAULT_CONCURRENCY);
  const coalesceMs = envNumber('BENCH_COALESCE_MS', DEFAULT_COALESCE_MS);
  say(`== propagation of a pull-Secret rotation to ${runtimes} runtimes (issue 5) ==`);
  say(
    `memory: ${(freemem() / 2 ** 30).toFixed(1)} GiB free of ${(totalmem() / 2 ** 30).toFixed(1)} GiB; ` +
      `each kube-apiserver takes about 0.25 GiB`,
  );
  const scripts = buildChildren(say);
  const scratch = await scratchDir('rtb-bench-propagation-');
  let bench: KcpBench | undefined;
  const watches: ObjectWatch<V1Secret>[] = [];
  const clients: KeepAliveClient[] = [];
  try {
    bench = await startKcpBench({ runtimes, scripts, dir: scratch.dir, say, concurrency, coalesceMs });
    const ctl = bench.controller;
    const rssAtStart = bench.controllerRssAtStart;
    for (const rt of bench.runtimes) {
      const w = new ObjectWatch<V1Secret>(rt.kubeConfig(), SECRETS, 'registry-credentials');
      await w.start();
      watches.push(w);
    }
    for (const rt of bench.runtimes) {
      const c = await KeepAliveClient.create(rt.kubeConfig());
      await c.request('GET', `${SECRETS}/registry-credentials`);
      clients.push(c);
    }
    await sleep(5_000);
    const rssReady = memoryKib(ctl.pid).rss;
    const gcReady = await collected(bench);
    say(
      `controller (pid ${ctl.pid}): fan-out concurrency ${concurrency}, coalescing ${coalesceMs} ms, ` +
        `VmRSS ${mb(rssAtStart)} at start (no runtimes), ${mb(rssReady)} with ${runtimes} runtimes Ready (5 s idle)`,
    );
    const figures: RotationFigures[] = [];
    const baselines: BaselineFigures[] = [];
    for (let i = 1; i <= rotations; i++) {
      const r = await rotate(bench, watches, `rotation-${runtimes}-${i}-${Date.now()}`);
      figures.push(r);
      say(
        `rotation ${i}: first ${r.firstMs.toFixed(0)} ms, last ${r.lastMs.toFixed(0)} ms, ` +
          `all statuses ${r.statusMs.toFixed(0)} ms (KCP write ${r.writeMs.toFixed(0)} ms, fan-out began at ` +
          `${r.fanOutMs?.toFixed(0) ?? '?'} ms); ${r.reconciles} reconciles of ${r.reconcileMeanMs.toFixed(0)} ms mean; ` +
          `per runtime ${r.requestsPerRuntime.toFixed(1)} requests on ${r.tlsPerRuntime.toFixed(1)} new TLS connections; ` +
          `KCP ${r.kcpRequests} requests; errors/retries ${r.errors}; CPU ${describeCpu(r.cpu)}`,
      );
      await sleep(1_000);
      const b = await runBaseline(bench, clients, i, concurrency);
      baselines.push(b);
      say(
        `baseline ${i}: ${runtimes} sequential GETs ${b.getsClientNodeMs.toFixed(0)} ms (client-node) / ` +
          `${b.getsKeepAliveMs.toFixed(0)} ms (keep-alive); the 4 objects to every runtime, ${concurrency} at a time: ` +
          `${b.writeClientNodeMs.toFixed(0)} ms (applyObjects, ${b.perRuntimeClientNodeMs.toFixed(0)} ms per runtime) / ` +
          `${b.writeKeepAliveMs.toFixed(0)} ms (keep-alive, ${b.perRuntimeKeepAliveMs.toFixed(0)} ms per runtime)`,
      );
      await sleep(1_000);
    }
    await sleep(5_000);
    const end = memoryKib(ctl.pid);
    const gcAfter = await collected(bench);
    const apiRss = bench.runtimes.map((r) => (r.pid !== undefined ? memoryKib(r.pid).rss : 0));
    const lines = readLog(ctl.proc.logPath);
    const result: PropagationFigures = {
      runtimes,
      concurrency,
      coalesceMs,
      startSeconds: bench.startSeconds,
      readySeconds: bench.readySeconds,
      rotations: figures,
      baselines,
      rssAtStart,
      rssReady,
      rssAfter: end.rss,
      // VmHWM is updated lazily by the kernel; never report a peak below a reading.
      rssPeak: Math.max(end.peak, rssReady, end.rss),
      gcReady,
      gcAfter,
      apiserverRss: apiRss.reduce((a, b) => a + b, 0) / apiRss.length,
      etcdRss: memoryKib(bench.etcdPid).rss,
      warnings: lines.filter((l) => l.level === 'warn').length,
      errorLines: lines
        .filter((l) => l.level === 'error' || l.level === 'warn')
        .slice(0, 5)
        .map((l) => `${l.level ?? ''}: ${l.msg ?? ''} ${l.err?.message?.split('\n')[0] ?? ''}`),
    };
    for (const line of propagationSummary(result)) say(line);
    return result;
  } finally {
    for (const w of watches) w.stop();
    for (const c of clients) c.close();
    await bench?.stop();
    await scratch.remove();
  }
}

const minMedMax = (xs: readonly number[], digits = 0): string =>
  `${Math.min(...xs).toFixed(digits)} / ${median(xs).toFixed(digits)} / ${Math.max(...xs).toFixed(digits)} ms`;

/** `runtime GET /version 1, …; kcp PATCH …/status 10` (runtime entries divided by n). */
function describePaths(paths: Readonly<Record<string, number>>, n: number): string {
  return Object.entries(paths)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${k.startsWith('runtime') ? (v / n).toFixed(1) : String(v)}`)
    .join('; ');
}

/** The summary lines of one run. */
export function propagationSummary(f: PropagationFigures): string[] {
  const r = f.rotations;
  const b = f.baselines;
  const last = r.map((x) => x.lastMs);
  const write = b.map((x) => x.writeClientNodeMs);
  return [
    `propagation, ${f.runtimes} runtimes, concurrency ${f.concurrency}, coalescing ${f.coalesceMs} ms, ${r.length} rotations (min / median / max):`,
    `  time to the last runtime   ${minMedMax(last)}`,
    `  time to the first runtime  ${minMedMax(r.map((x) => x.firstMs))}`,
    `  fan-out began after        ${minMedMax(r.flatMap((x) => (x.fanOutMs !== undefined ? [x.fanOutMs] : [])))}`,
    `  every CR status updated    ${minMedMax(r.map((x) => x.statusMs))}`,
    `  reconcile per runtime      ${minMedMax(r.map((x) => x.reconcileMeanMs))} (mean per rotation); ` +
      `${median(r.map((x) => x.requestsPerRuntime)).toFixed(1)} requests, ${median(r.map((x) => x.tlsPerRuntime)).toFixed(1)} new TLS connections per runtime`,
    `  baseline: ${f.runtimes} sequential GETs ${minMedMax(b.map((x) => x.getsClientNodeMs))} (client-node), ` +
      `${minMedMax(
        b.map((x) => x.getsKeepAliveMs),
        1,
      )} (keep-alive)`,
    `  baseline: the 4 objects to every runtime from the bench, ${f.concurrency} at a time: ${minMedMax(write)} (applyObjects), ` +
      `${minMedMax(b.map((x) => x.writeKeepAliveMs))} (keep-alive)`,
    `  CPU of the bench per runtime for those writes (median): ${median(b.map((x) => x.cpuPerRuntimeClientNodeMs)).toFixed(1)} ms (applyObjects), ` +
      `${median(b.map((x) => x.cpuPerRuntimeKeepAliveMs)).toFixed(1)} ms (keep-alive)`,
    `  ratio controller time-to-last / baseline write (medians): ${(median(last) / median(write)).toFixed(2)}`,
    `  requests of the last rotation per runtime: ${describePaths(r[r.length - 1]?.paths ?? {}, f.runtimes)}`,
    `  controller VmRSS: ${mb(f.rssAtStart)} at start, ${mb(f.rssReady)} Ready, ${mb(f.rssAfter)} after the rotations, peak ${mb(f.rssPeak)}`,
    `  after a forced GC: VmRSS ${mb(f.gcReady.rss)} / heap ${mb(f.gcReady.heap)} / external ${mb(f.gcReady.external)} Ready; ` +
      `${mb(f.gcAfter.rss)} / ${mb(f.gcAfter.heap)} / ${mb(f.gcAfter.external)} after the rotations`,
    `  controller CPU per runtime and rotation (median): ${median(r.map((x) => ((x.cpu.cores.controller ?? 0) * x.cpu.seconds * 1000) / f.runtimes)).toFixed(1)} ms; ` +
      `runtime API servers ${median(r.map((x) => ((x.cpu.cores['runtime apiservers'] ?? 0) * x.cpu.seconds * 1000) / f.runtimes)).toFixed(1)} ms`,
    `  CPU during rotations (median cores): controller ${median(r.map((x) => x.cpu.cores.controller ?? 0)).toFixed(2)}, ` +
      `runtime apiservers ${median(r.map((x) => x.cpu.cores['runtime apiservers'] ?? 0)).toFixed(2)}, ` +
      `etcd ${median(r.map((x) => x.cpu.cores.etcd ?? 0)).toFixed(2)}, others ${median(r.map((x) => x.cpu.others)).toFixed(2)}`,
    `  kube-apiserver VmRSS ${mb(f.apiserverRss)} each, etcd ${mb(f.etcdRss)}; started in ${f.startSeconds.toFixed(0)} s, all Ready ${f.readySeconds.toFixed(1)} s after creation`,
    `  controller log: ${f.warnings} warnings${f.errorLines.length > 0 ? `; first: ${f.errorLines.join(' | ')}` : ''}`,
  ];
}

if (isMain(import.meta.url)) {
  for (const n of envIntegers('BENCH_RUNTIMES', [10])) await runPropagation(defaultSay, n);
}
