// Issue 6: drift repair latency, from a tamper on a runtime until the KCP's version is back.
//
// One KCP and RUNTIMES runtimes (default 3) on real API servers; the controller in direct mode
// with the drift listener in its own process (bench/support/controller-child.ts, periodic resync
// off); on every runtime the webhook with the drift channel in its own process
// (bench/support/drift-webhook-child.ts), registered with the runtime's API server as the
// drift ValidatingWebhookConfiguration the product renders, its client certificate taken from
// the Secret the controller installed. Then tampers, spread evenly over the runtimes
// (one at a time per runtime, the runtimes in parallel), cycling through: an edit of the pull
// Secret's data, an edit of the ConfigMap's data, a deletion of the ClusterTrustBundle. Each is
// timed from issuing the tamper until a watch on the runtime delivers the restored object.
// Prints figures (and the machine's CPU use by group); asserts nothing.
//
// Two series on the same landscape: "spaced" (the next tamper on a runtime BENCH_TAMPER_GAP_MS
// after the previous repair, long enough for its reconcile to end) and "back-to-back" (no pause).
//
//   npx tsx bench/drift-repair.ts   BENCH_TAMPERS=150 BENCH_TAMPERS_BUSY=150 BENCH_TAMPER_GAP_MS=1500
import type { V1Secret } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import type { LocalCluster } from '../src/envtest/control-plane.js';
import { freePort } from '../src/envtest/free-port.js';
import type { ManagedProcess } from '../src/envtest/managed-process.js';
import { waitReady } from '../src/envtest/wait-ready.js';
import { applyObjects } from '../src/kube/apply.js';
import { kubeRequest } from '../src/kube/kube-request.js';
import { renderWebhookManifests } from '../src/render/webhook-manifests.js';
import { describeCpu, GroupCpuWindow, metricValue, type GroupCpu } from './support/cpu-groups.js';
import type { DriftWebhookConfig } from './support/drift-webhook-child.js';
import { envNumber, isMain, say as defaultSay } from './support/env.js';
import { startKcpBench, type KcpBench } from './support/kcp-bench.js';
import { memoryKib } from './support/proc.js';
import { buildChildren, scratchDir, sleep, startNode, type ChildScripts } from './support/processes.js';
import { summarize, mb, verdict, type LatencySummary } from './support/stats.js';
import {
  KIND_OF,
  TAMPER_KINDS,
  tamper,
  unwatchSet,
  watchSet,
  type TamperSample,
  type TamperTarget,
} from './support/tampers.js';
import { writeServingTls, type ServingTls } from './support/webhook-under-test.js';

const TARGET_P99_MS = 1_000;
const KINDS = TAMPER_KINDS;

/** One series of tampers. */
export interface SeriesFigures {
  readonly name: string;
  /** Pause after a repair before the next tamper on the same runtime. */
  readonly gapMs: number;
  readonly samples: readonly TamperSample[];
  readonly all: LatencySummary;
  readonly byKind: Readonly<Record<string, LatencySummary>>;
  readonly afterPersist: LatencySummary;
  readonly tamperWrite: LatencySummary;
  /** From issuing the tamper until the controller logged the event (ms resolution of its log). */
  readonly reportedAtKcp: LatencySummary;
  readonly unrepaired: number;
  readonly seconds: number;
  readonly cpu: GroupCpu;
  /** Listener: events accepted, responses by code, its own repair histogram (event → reconciled). */
  readonly eventsAccepted: number;
  readonly listenerCodes: Readonly<Record<string, number>>;
  readonly listenerRepairMeanMs: number;
  readonly listenerRepairUnder1s: number;
  /** Forwarders (summed over runtimes): sends, retries, dropped, deduplicated; mean delivery. */
  readonly forwarder: {
    readonly sends: number;
    readonly retries: number;
    readonly dropped: number;
    readonly deduplicated: number;
    readonly deliveryMeanMs: number;
  };
  readonly reconciles: number;
  readonly reconcileMeanMs: number;
  /** Controller requests to runtimes per tamper, and new TLS connections per tamper. */
  readonly requestsPerTamper: number;
  readonly tlsPerTamper: number;
  /** Requests to runtimes by `METHOD path`, per tamper. */
  readonly paths: Readonly<Record<string, number>>;
  readonly syncErrors: number;
}

export interface DriftFigures {
  readonly runtimes: number;
  readonly series: readonly SeriesFigures[];
  readonly controllerRss: number;
  readonly controllerPeak: number;
}

interface Runtime extends TamperTarget {
  readonly webhook: ManagedProcess;
  readonly webhookUrl: string;
}

function getText(url: string, caPem: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: caPem }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Starts a runtime's drift webhook and registers it; returns what the tampers need. */
async function prepareRuntime(
  bench: KcpBench,
  cluster: LocalCluster,
  scripts: ChildScripts,
  tls: ServingTls,
  dir: string,
): Promise<Runtime> {
  const listenerPort = bench.controller.config.drift?.listenerPort;
  if (listenerPort === undefined) throw new Error('the controller serves no drift listener');
  const kc = cluster.kubeConfig();
  // The client certificate the controller installed, as the kubelet would mount it.
  const files = join(dir, cluster.name);
  await mkdir(files, { recursive: true });
  const watcherTls = await kubeRequest<V1Secret>(kc, {
    method: 'GET',
    path: '/api/v1/namespaces/kyma-system/secrets/rt-bootstrapper-watcher-tls',
  });
  for (const key of ['tls.crt', 'tls.key', 'ca.crt']) {
    await writeFile(join(files, key), Buffer.from(watcherTls.data?.[key] ?? '', 'base64'));
  }
  const port = await freePort();
  const config: DriftWebhookConfig = {
    kubeconfigPath: cluster.kubeconfigPath,
    certFile: tls.certFile,
    keyFile: tls.keyFile,
    port,
    drift: {
      url: `https://127.0.0.1:${listenerPort}`,
      certFile: join(files, 'tls.crt'),
      keyFile: join(files, 'tls.key'),
      caFile: join(files, 'ca.crt'),
    },
  };
  const configFile = join(files, 'webhook-config.json');
  await writeFile(configFile, JSON.stringify(config));
  const webhook = startNode(`webhook-${cluster.name}`, scripts.driftWebhookChild, [configFile], dir);
  const base = `https://127.0.0.1:${port}`;
  await waitReady(webhook, `${base}/readyz`, { ca: tls.caPem }, 60_000);
  // The controller's own registration points at the in-cluster Service; this one at the process.
  const vwc = renderWebhookManifests({
    image: 'x',
    url: `${base}/mutate`,
    caBundlePem: tls.caPem,
    driftListenerUrl: 'https://unused',
  }).validatingWebhookConfiguration;
  if (!vwc) throw new Error('no drift ValidatingWebhookConfiguration rendered');
  await applyObjects(kc, [{ ...vwc, metadata: { ...vwc.metadata, name: 'drift-local' } }]);

  return { ...(await watchSet(cluster)), webhook, webhookUrl: base };
}

interface LogLine {
  readonly time?: string;
  readonly msg?: string;
  readonly runtime?: string;
  readonly kind?: string;
}

/** When the controller logged each runtime's drift events (ms since the epoch), by runtime and kind. */
function driftLogTimes(path: string): Map<string, number[]> {
  const times = new Map<string, number[]>();
  for (const text of readFileSync(path, 'utf8').split('\n')) {
    if (!text.includes('drift reported')) continue;
    try {
      const l = JSON.parse(text) as LogLine;
      if (l.time === undefined || l.runtime === undefined) continue;
      const key = `${l.runtime} ${l.kind ?? ''}`;
      const list = times.get(key) ?? [];
      list.push(Date.parse(l.time));
      times.set(key, list);
    } catch {
      // not a log record
    }
  }
  return times;
}

async function runSeries(
  bench: KcpBench,
  prepared: readonly Runtime[],
  caPem: string,
  o: { name: string; total: number; gapMs: number; timeoutMs: number; say: (line: string) => void },
): Promise<SeriesFigures> {
  const ctl = bench.controller;
  const metrics0 = await ctl.metrics();
  const state0 = await ctl.state();
  const hooks0 = await Promise.all(prepared.map((r) => getText(`${r.webhookUrl}/metrics`, caPem)));
  const cpu = new GroupCpuWindow({
    controller: [ctl.pid],
    webhooks: prepared.map((r) => r.webhook.pid).filter((p): p is number => p !== undefined),
    'runtime apiservers': bench.runtimes.map((c) => c.pid).filter((p): p is number => p !== undefined),
    'kcp apiserver': bench.kcp.pid !== undefined ? [bench.kcp.pid] : [],
    etcd: [bench.etcdPid],
  });
  const samples: TamperSample[] = [];
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    prepared.map(async (r, ri) => {
      for (let k = 0; ; k++) {
        const n = next++;
        if (n >= o.total) return;
        const kind = KINDS[(k + ri) % KINDS.length] ?? 'Secret edit';
        const s = await tamper(r, kind, n, o.timeoutMs);
        samples.push(s);
        if (s.failure !== undefined) o.say(`  ${r.cluster.name} tamper ${n} (${kind}): ${s.failure}`);
        if (samples.length % 50 === 0) o.say(`  ${o.name}: ${samples.length} tampers done`);
        await sleep(o.gapMs);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const window = cpu.close();
  // Let the last reconciles finish before reading the counters.
  await sleep(Math.max(2_000, o.gapMs));
  const metrics1 = await ctl.metrics();
  const state1 = await ctl.state();
  const hooks1 = await Promise.all(prepared.map((r) => getText(`${r.webhookUrl}/metrics`, caPem)));
  const delta = (name: string, labels: Record<string, string> = {}): number =>
    metricValue(metrics1, name, labels) - metricValue(metrics0, name, labels);
  const hookDelta = (name: string): number =>
    hooks1.reduce((a, m) => a + metricValue(m, name), 0) -
    hooks0.reduce((a, m) => a + metricValue(m, name), 0);
  const ports = bench.runtimes.map((c) => String(c.port));
  const sumPorts = (m: Record<string, number>): number => ports.reduce((a, p) => a + (m[p] ?? 0), 0);
  const repaired = samples.flatMap((s) => (s.repairMs !== undefined ? [s.repairMs] : []));
  const byKind: Record<string, LatencySummary> = {};
  for (const kind of KINDS) {
    byKind[kind] = summarize(
      samples.filter((s) => s.kind === kind && s.repairMs !== undefined).map((s) => s.repairMs ?? 0),
    );
  }
  // Match each tamper with the first drift log line of its runtime and kind at or after it.
  const logged = driftLogTimes(ctl.proc.logPath);
  const reported: number[] = [];
  for (const s of samples) {
    const times = logged.get(`${s.runtime} ${KIND_OF[s.kind]}`) ?? [];
    const at = times.find((t) => t >= Math.floor(s.issuedAt));
    if (at !== undefined && s.repairMs !== undefined && at - s.issuedAt <= s.repairMs)
      reported.push(at - s.issuedAt);
  }
  const q = { name: 'runtimebootstrapper' };
  const reconciles = delta('workqueue_work_duration_seconds_count', q);
  const listenerRepairs = delta('rtb_drift_repair_seconds_count');
  const codes: Record<string, number> = {};
  for (const code of ['202', '400', '403', '404', '405', '413', '429']) {
    const v = delta('rtb_drift_listener_requests_total', { code });
    if (v > 0) codes[code] = v;
  }
  const deliveries = hookDelta('rtb_drift_forwarder_delivery_seconds_count');
  const paths: Record<string, number> = {};
  for (const [k, v] of Object.entries(state1.requestPaths)) {
    const d = v - (state0.requestPaths[k] ?? 0);
    if (d > 0 && k.startsWith('runtime ')) paths[k.slice('runtime '.length)] = d / samples.length;
  }
  return {
    name: o.name,
    gapMs: o.gapMs,
    samples,
    all: summarize(repaired),
    byKind,
    afterPersist: summarize(
      samples.flatMap((s) => (s.afterPersistMs !== undefined ? [s.afterPersistMs] : [])),
    ),
    tamperWrite: summarize(samples.map((s) => s.writeMs)),
    reportedAtKcp: summarize(reported),
    unrepaired: samples.length - repaired.length,
    seconds,
    cpu: window,
    eventsAccepted: delta('rtb_drift_listener_events_accepted_total'),
    listenerCodes: codes,
    listenerRepairMeanMs:
      listenerRepairs > 0 ? (delta('rtb_drift_repair_seconds_sum') * 1000) / listenerRepairs : 0,
    listenerRepairUnder1s:
      listenerRepairs > 0 ? delta('rtb_drift_repair_seconds_bucket', { le: '1' }) / listenerRepairs : 0,
    forwarder: {
      sends: hookDelta('rtb_drift_forwarder_sends_total'),
      retries: hookDelta('rtb_drift_forwarder_retries_total'),
      dropped: hookDelta('rtb_drift_forwarder_dropped_total'),
      deduplicated: hookDelta('rtb_drift_forwarder_deduplicated_total'),
      deliveryMeanMs:
        deliveries > 0 ? (hookDelta('rtb_drift_forwarder_delivery_seconds_sum') * 1000) / deliveries : 0,
    },
    reconciles,
    reconcileMeanMs:
      reconciles > 0 ? (delta('workqueue_work_duration_seconds_sum', q) * 1000) / reconciles : 0,
    requestsPerTamper: (sumPorts(state1.requests) - sumPorts(state0.requests)) / samples.length,
    tlsPerTamper: (sumPorts(state1.tlsConnections) - sumPorts(state0.tlsConnections)) / samples.length,
    paths,
    syncErrors: delta('rtb_runtime_sync_errors_total') + delta('workqueue_retries_total', q),
  };
}

/** Runs the benchmark: a spaced series, then a back-to-back one, on the same landscape. */
export async function runDriftRepair(say: (line: string) => void = defaultSay): Promise<DriftFigures> {
  const runtimes = envNumber('BENCH_DRIFT_RUNTIMES', 3);
  const spaced = envNumber('BENCH_TAMPERS', 150);
  const busy = envNumber('BENCH_TAMPERS_BUSY', 150);
  const gapMs = envNumber('BENCH_TAMPER_GAP_MS', 1_500);
  const timeoutMs = envNumber('BENCH_REPAIR_TIMEOUT_MS', 15_000);
  say(`== drift repair latency over ${runtimes} runtimes (issue 6) ==`);
  const scripts = buildChildren(say);
  const scratch = await scratchDir('rtb-bench-drift-');
  let bench: KcpBench | undefined;
  const prepared: Runtime[] = [];
  try {
    bench = await startKcpBench({ runtimes, scripts, dir: scratch.dir, say, drift: {} });
    const tls = await writeServingTls(scratch.dir);
    for (const cluster of bench.runtimes)
      prepared.push(await prepareRuntime(bench, cluster, scripts, tls, scratch.dir));
    // The API servers pick up a new webhook registration within about a second.
    await sleep(2_000);
    // Warm-up: every kind once per runtime, not counted; proves the channel works end to end.
    for (const r of prepared) {
      for (const [i, kind] of KINDS.entries()) {
        const s = await tamper(r, kind, 1000 + i, 30_000);
        if (s.repairMs === undefined)
          throw new Error(
            `warm-up on ${r.cluster.name}, ${kind}: ${s.failure ?? '?'}\n${bench.controller.proc.logTail(15)}`,
          );
      }
    }
    say(`warm-up done: every kind repaired once on every runtime`);
    await sleep(gapMs);
    const series: SeriesFigures[] = [];
    for (const [name, total, gap] of [
      ['spaced', spaced, gapMs],
      ['back-to-back', busy, 0],
    ] as const) {
      const f = await runSeries(bench, prepared, tls.caPem, { name, total, gapMs: gap, timeoutMs, say });
      series.push(f);
      for (const line of seriesSummary(f, runtimes)) say(line);
    }
    const mem = memoryKib(bench.controller.pid);
    return { runtimes, series, controllerRss: mem.rss, controllerPeak: mem.peak };
  } finally {
    for (const r of prepared) {
      unwatchSet(r);
    }
    await Promise.all(prepared.map((r) => r.webhook.stop()));
    await bench?.stop();
    await scratch.remove();
  }
}

const f0 = (v: number): string => `${v.toFixed(0)} ms`;

/** The lines of one series. */
export function seriesSummary(f: SeriesFigures, runtimes: number): string[] {
  const a = f.all;
  const line = (s: LatencySummary): string =>
    `n ${s.count}, p50 ${f0(s.p50)}, p90 ${f0(s.p90)}, p99 ${f0(s.p99)}, max ${f0(s.max)}`;
  const met = f.unrepaired === 0 && a.p99 < TARGET_P99_MS;
  const pace = f.gapMs > 0 ? `${f.gapMs} ms after each repair` : 'back to back';
  return [
    `drift repair, ${f.name}: ${runtimes} runtimes, ${f.samples.length} tampers in ${f.seconds.toFixed(0)} s (one at a time per runtime, the next ${pace}):`,
    `  tamper → restored (watch)   ${line(a)}; unrepaired ${f.unrepaired}`,
    ...KINDS.map((k) => {
      const s = f.byKind[k];
      return s ? `    ${k.padEnd(26)} ${line(s)}` : '';
    }),
    `  tamper persisted → restored ${line(f.afterPersist)}`,
    `  the tamper write itself     ${line(f.tamperWrite)}`,
    `  tamper → logged by the KCP  ${line(f.reportedAtKcp)}`,
    `  target p99 < ${TARGET_P99_MS} ms: ${verdict(met)} (p99 ${f0(a.p99)})`,
    `  listener: ${f.eventsAccepted} events accepted, responses ${JSON.stringify(f.listenerCodes)}, its repair time (event → reconciled) mean ${f0(f.listenerRepairMeanMs)}, ${(f.listenerRepairUnder1s * 100).toFixed(1)} % under 1 s`,
    `  forwarders: ${f.forwarder.sends} sends, ${f.forwarder.retries} retries, ${f.forwarder.dropped} dropped, ${f.forwarder.deduplicated} deduplicated, delivery mean ${f0(f.forwarder.deliveryMeanMs)}`,
    `  controller: ${f.reconciles} reconciles of ${f0(f.reconcileMeanMs)} mean, ${f.requestsPerTamper.toFixed(1)} requests to the runtime on ${f.tlsPerTamper.toFixed(1)} new TLS connections per tamper, errors/retries ${f.syncErrors}`,
    `  requests per tamper: ${Object.entries(f.paths)
      .sort(([x], [y]) => x.localeCompare(y))
      .map(([k, v]) => `${k} ${v.toFixed(1)}`)
      .join('; ')}`,
    `  CPU: ${describeCpu(f.cpu)}`,
  ];
}

/** The summary lines of a run. */
export function driftSummary(f: DriftFigures): string[] {
  return [
    ...f.series.flatMap((s) => seriesSummary(s, f.runtimes)),
    `  controller VmRSS at the end ${mb(f.controllerRss)} (peak ${mb(f.controllerPeak)})`,
  ];
}

if (isMain(import.meta.url)) await runDriftRepair(defaultSay);
