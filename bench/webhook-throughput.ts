// Webhook throughput, latency and memory (issue 3).
//
//   npx tsx bench/webhook-throughput.ts
//
// The real webhook (`rtb webhook`, compiled by tsc, plain node) serves from a real local
// cluster's caches in its own process; a bare node:https server with the same certificate and
// server settings, answering the webhook's own response to the same request, is the baseline,
// also in its own process. The load generators run in a third process. With taskset both
// servers are pinned to CPU 1 and the load to CPU 0, so on two cores a server never competes
// with its own load. Rounds alternate baseline and webhook and everything is measured in the
// same run; the CPU that other processes on the (shared) machine used during each measurement
// is printed next to it. The figures are printed, never asserted.
//
// Environment (for trial runs): BENCH_ROUNDS (3), BENCH_SECONDS (10), BENCH_WARMUP_SECONDS (3),
// BENCH_CONNECTIONS (8), BENCH_RATE (1000), BENCH_RATE_SECONDS (10), BENCH_IDLE_SECONDS (10);
// BENCH_CPU_PROF=<dir> runs the webhook with --cpu-prof and keeps its profile in <dir>.
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ControlPlane } from '../src/envtest/control-plane.js';
import { envNumber, isMain, say as print } from './support/env.js';
import type { AutocannonConfig, AutocannonResult } from './support/load-autocannon.js';
import type { PacedConfig, PacedResult } from './support/load-paced.js';
import { memoryKib } from './support/proc.js';
import { buildChildren, canPin, pinToCpu, runNode, scratchDir, sleep } from './support/processes.js';
import { describeLatency, mb, median, ms, verdict } from './support/stats.js';
import {
  admissionReviewFor,
  defaultedSeedPod,
  patchOf,
  post,
  prepareWebhookCluster,
  startBareServer,
  startWebhookProcess,
  type ServerProcess,
} from './support/webhook-under-test.js';

const SERVER_CPU = 1;
// Replaced by a counter in each distinct request.
const DISTINCT_MARKER = 'DISTINCTPOD';
const LOAD_CPU = 0;

/** Targets of issue 3. */
export const THROUGHPUT_TARGETS = { ratio: 0.7, fixedRateP99Ms: 2, rssMb: 100 } as const;

/** One closed-loop run against one server. */
export interface MaxRun extends AutocannonResult {
  readonly round: number;
}

/** One fixed-rate run against one server. */
export interface PacedRun extends PacedResult {
  readonly round: number;
}

/** What the throughput benchmark measured. */
export interface ThroughputFigures {
  readonly pinned: boolean;
  readonly connections: number;
  readonly seconds: number;
  readonly requestBytes: number;
  readonly responseBytes: number;
  readonly patchOperations: number;
  readonly bare: readonly MaxRun[];
  readonly webhook: readonly MaxRun[];
  readonly bareRps: number;
  readonly webhookRps: number;
  /** Median webhook requests/s over median baseline requests/s. */
  readonly ratio: number;
  /** Requests per server CPU-second, webhook over baseline (does not depend on saturation). */
  readonly ratioPerCpu: number;
  /** The webhook with distinct Pods (a name of its own in each request). */
  readonly distinct: readonly MaxRun[];
  readonly distinctRps: number;
  readonly distinctRatio: number;
  readonly distinctRatioPerCpu: number;
  readonly rate: number;
  readonly rateSeconds: number;
  readonly pacedWebhook: readonly PacedRun[];
  /** The webhook at the fixed rate with a Pod of a new name in every request. */
  readonly pacedDistinct: readonly PacedRun[];
  readonly pacedBare: readonly PacedRun[];
  /** Median over the fixed-rate rounds of the webhook's p50 and p99. */
  readonly fixedRateP50: number;
  readonly fixedRateP99: number;
  readonly rssReadyKib: number;
  readonly rssIdleKib: number;
  readonly rssAfterKib: number;
  /** VmRSS at the end of the fixed-rate rounds, the highest. */
  readonly rssAtRateKib: number;
  readonly rssPeakKib: number;
  readonly idleSeconds: number;
  readonly webhookLogProblems: number;
}

/** Runs the benchmark; prints as it goes and returns the figures. */
export async function runWebhookThroughput(say: (line: string) => void = print): Promise<ThroughputFigures> {
  const rounds = envNumber('BENCH_ROUNDS', 3);
  const seconds = envNumber('BENCH_SECONDS', 10);
  const warmupSeconds = envNumber('BENCH_WARMUP_SECONDS', 3);
  const connections = envNumber('BENCH_CONNECTIONS', 8);
  const rate = envNumber('BENCH_RATE', 1000);
  const rateSeconds = envNumber('BENCH_RATE_SECONDS', 10);
  const idleSeconds = envNumber('BENCH_IDLE_SECONDS', 10);
  const profileDir = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined;

  say('== webhook throughput (issue 3) ==');
  const scripts = buildChildren(say);
  const scratch = await scratchDir('rtb-bench-throughput-');
  const dir = scratch.dir;
  let plane: ControlPlane | undefined;
  const servers: ServerProcess[] = [];
  try {
    plane = await ControlPlane.start({ clusters: ['bench'] });
    const { cluster, kc, tls } = await prepareWebhookCluster(plane, 'bench', dir, say);

    const webhook = await startWebhookProcess(
      scripts,
      cluster,
      tls,
      dir,
      profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    );
    servers.push(webhook);
    const rssReady = memoryKib(webhook.pid).rss;
    const pinned = canPin();
    if (pinned) pinToCpu(webhook.pid, SERVER_CPU);
    say(
      `webhook: rtb webhook (compiled, node ${process.version}), pid ${webhook.pid}` +
        (pinned
          ? `, pinned to CPU ${SERVER_CPU}; load generators on CPU ${LOAD_CPU}`
          : ', not pinned (no taskset)'),
    );
    say(`  resident memory when ready: ${mb(rssReady)}; idling ${idleSeconds} s`);
    await sleep(idleSeconds * 1000);
    const rssIdle = memoryKib(webhook.pid).rss;
    say(`  resident memory idle after start: ${mb(rssIdle)}`);

    const seedPod = await defaultedSeedPod(kc);
    // The seed example is a Deployment's Pod template: its ReplicaSet creates the Pods with
    // generateName, so they reach admission without a name, all alike.
    const { name: _seedName, ...seedMetadata } = seedPod.metadata ?? {};
    const replicaPod = { ...seedPod, metadata: { ...seedMetadata, generateName: 'pause-test1-7d4b9c8f6-' } };
    const body = admissionReviewFor(replicaPod);
    const bodyFile = join(dir, 'admission-review.json');
    await writeFile(bodyFile, body);
    // Distinct Pods: the seed Pod created under a name of its own, a new one in every request (a
    // counter in place of DISTINCT_MARKER).
    const distinctFile = join(dir, 'admission-review-distinct.json');
    await writeFile(
      distinctFile,
      admissionReviewFor({ ...seedPod, metadata: { ...seedPod.metadata, name: `pod-${DISTINCT_MARKER}` } }),
    );
    // The first request also creates the pull Secret's copy in namespace default.
    const first = await post(webhook.url, body, tls.caPem);
    if (first.status !== 200) throw new Error(`the webhook answered ${first.status}: ${first.body}`);
    const patch = patchOf(first.body);
    const second = await post(webhook.url, body, tls.caPem);
    patchOf(second.body);
    const responseFile = join(dir, 'admission-response.json');
    await writeFile(responseFile, second.body);
    say(
      `request: AdmissionReview of the seed Deployment's Pod as its ReplicaSet creates it (generateName, ` +
        `as the API server defaults it; namespace default, CREATE), ` +
        `${Buffer.byteLength(body)} B; answer: ${patch.length} JSON-patch operations, ${Buffer.byteLength(second.body)} B`,
    );

    const bare = await startBareServer(scripts, tls, responseFile, dir);
    servers.push(bare);
    if (pinned) pinToCpu(bare.pid, SERVER_CPU);
    say(`baseline: bare node:https server answering that response, pid ${bare.pid}`);

    const closedLoop = async (target: ServerProcess, label: string, round: number): Promise<MaxRun> => {
      const resultFile = join(dir, `max-${label}-${round}.result.json`);
      const config: AutocannonConfig = {
        url: target.url,
        ...(label === 'distinct' ? { bodyFile: distinctFile, uniqueMarker: DISTINCT_MARKER } : { bodyFile }),
        connections,
        warmupSeconds,
        durationSeconds: seconds,
        serverPid: target.pid,
        resultFile,
      };
      const configFile = join(dir, `max-${label}-${round}.json`);
      await writeFile(configFile, JSON.stringify(config));
      await runNode(
        `autocannon-${label}-${round}`,
        scripts.loadAutocannon,
        [configFile],
        dir,
        pinned ? LOAD_CPU : undefined,
      );
      const r = JSON.parse(await readFile(resultFile, 'utf8')) as AutocannonResult;
      say(
        `  round ${round} ${label.padEnd(7)} ${r.requestsPerSecond.toFixed(0).padStart(6)} req/s, ` +
          `${describeLatency(r.latency, ['p50', 'p99'])}; CPU: server ${r.serverCpu.toFixed(2)}, ` +
          `load ${r.loadCpu.toFixed(2)}, others ${r.otherCpu.toFixed(2)}` +
          (r.non2xx + r.errors + r.timeouts > 0
            ? `; non-2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts}`
            : ''),
      );
      return { ...r, round };
    };

    const paced = async (target: ServerProcess, label: string, round: number): Promise<PacedRun> => {
      const resultFile = join(dir, `paced-${label}-${round}.result.json`);
      const config: PacedConfig = {
        url: target.url,
        ...(label === 'distinct' ? { bodyFile: distinctFile, uniqueMarker: DISTINCT_MARKER } : { bodyFile }),
        caFile: tls.caFile,
        rate,
        warmupSeconds,
        durationSeconds: rateSeconds,
        maxSockets: 16,
        serverPid: target.pid,
        resultFile,
      };
      const configFile = join(dir, `paced-${label}-${round}.json`);
      await writeFile(configFile, JSON.stringify(config));
      await runNode(
        `paced-${label}-${round}`,
        scripts.loadPaced,
        [configFile],
        dir,
        pinned ? LOAD_CPU : undefined,
      );
      const r = JSON.parse(await readFile(resultFile, 'utf8')) as PacedResult;
      say(
        `  round ${round} ${label.padEnd(7)} ${r.achievedRate.toFixed(0)} req/s, ${r.ok} ok, ${r.failed} failed; ` +
          `${describeLatency(r.latency, ['p50', 'p90', 'p99', 'p999'])}; pacer lag p99 ${ms(r.sendLag.p99)}; ` +
          `CPU: server ${r.serverCpu.toFixed(2)}, others ${r.otherCpu.toFixed(2)}`,
      );
      return { ...r, round };
    };

    say(
      `max throughput: autocannon 8.0.0 (closed loop), ${connections} keep-alive connections, ` +
        `${warmupSeconds} s warm-up + ${seconds} s per run, ${rounds} rounds alternating`,
    );
    say(
      `  webhook: that request again and again (the ReplicaSet's Pods, alike but for the uid); ` +
        `distinct: the seed Pod under a name of its own, new in every request (every answer decided anew)`,
    );
    const bareRuns: MaxRun[] = [];
    const webhookRuns: MaxRun[] = [];
    const distinctRuns: MaxRun[] = [];
    for (let round = 1; round <= rounds; round++) {
      const order =
        round % 2 === 1
          ? (['bare', 'webhook', 'distinct'] as const)
          : (['distinct', 'webhook', 'bare'] as const);
      for (const which of order) {
        if (which === 'bare') bareRuns.push(await closedLoop(bare, 'bare', round));
        else if (which === 'webhook') webhookRuns.push(await closedLoop(webhook, 'webhook', round));
        else distinctRuns.push(await closedLoop(webhook, 'distinct', round));
      }
    }

    say(
      `fixed rate: ${rate} req/s open loop (node:https keep-alive), ${warmupSeconds} s warm-up + ` +
        `${rateSeconds} s per run, ${rounds} rounds alternating; latency from send to last byte`,
    );
    const pacedWebhook: PacedRun[] = [];
    const pacedDistinct: PacedRun[] = [];
    // The webhook's VmRSS right at the end of each of its fixed-rate rounds (the highest).
    let rssAtRate = 0;
    const pacedBare: PacedRun[] = [];
    for (let round = 1; round <= rounds; round++) {
      const order =
        round % 2 === 1
          ? (['webhook', 'distinct', 'bare'] as const)
          : (['bare', 'distinct', 'webhook'] as const);
      for (const which of order) {
        if (which === 'bare') pacedBare.push(await paced(bare, 'bare', round));
        else {
          const run = await paced(webhook, which, round);
          (which === 'webhook' ? pacedWebhook : pacedDistinct).push(run);
          rssAtRate = Math.max(rssAtRate, memoryKib(webhook.pid).rss);
        }
      }
    }

    say(`idling ${idleSeconds} s after the load`);
    await sleep(idleSeconds * 1000);
    const after = memoryKib(webhook.pid);
    const log = await readFile(webhook.proc.logPath, 'utf8');
    const webhookLogProblems = log.split('\n').filter((l) => /"level":"(warn|error|fatal)"/.test(l)).length;

    const bareRps = median(bareRuns.map((r) => r.requestsPerSecond));
    const webhookRps = median(webhookRuns.map((r) => r.requestsPerSecond));
    const distinctRps = median(distinctRuns.map((r) => r.requestsPerSecond));
    const perCpu = (runs: readonly MaxRun[]): number =>
      median(runs.map((r) => r.requestsPerSecond / r.serverCpu));
    const figures: ThroughputFigures = {
      pinned,
      connections,
      seconds,
      requestBytes: Buffer.byteLength(body),
      responseBytes: Buffer.byteLength(second.body),
      patchOperations: patch.length,
      bare: bareRuns,
      webhook: webhookRuns,
      bareRps,
      webhookRps,
      ratio: webhookRps / bareRps,
      ratioPerCpu: perCpu(webhookRuns) / perCpu(bareRuns),
      distinct: distinctRuns,
      distinctRps,
      distinctRatio: distinctRps / bareRps,
      distinctRatioPerCpu: perCpu(distinctRuns) / perCpu(bareRuns),
      rate,
      rateSeconds,
      pacedWebhook,
      pacedDistinct,
      pacedBare,
      fixedRateP50: median(pacedWebhook.map((r) => r.latency.p50)),
      fixedRateP99: median(pacedWebhook.map((r) => r.latency.p99)),
      rssReadyKib: rssReady,
      rssIdleKib: rssIdle,
      rssAfterKib: after.rss,
      rssAtRateKib: rssAtRate,
      rssPeakKib: after.peak,
      idleSeconds,
      webhookLogProblems,
    };
    say('-- webhook throughput: result --');
    for (const line of throughputSummary(figures)) say(line);
    return figures;
  } finally {
    for (const s of servers.reverse()) await s.proc.stop();
    await plane?.stop();
    await scratch.remove();
    if (profileDir) say(`webhook CPU profile: ${profileDir}`);
  }
}

/** The run during which other processes used the least CPU, as `label p50 …, p99 … (others x cores)`. */
function quietest(runs: readonly PacedRun[], label: string): string {
  const best = [...runs].sort((a, b) => a.otherCpu - b.otherCpu)[0];
  if (!best) return `${label} none`;
  return `${label} p50 ${ms(best.latency.p50)}, p99 ${ms(best.latency.p99)} (others ${best.otherCpu.toFixed(2)} cores)`;
}

/** The result lines with the targets. */
export function throughputSummary(f: ThroughputFigures): string[] {
  const t = THROUGHPUT_TARGETS;
  const lat = (runs: readonly (MaxRun | PacedRun)[], key: 'p50' | 'p99'): string =>
    ms(median(runs.map((r) => r.latency[key])));
  const rssWorst = Math.max(f.rssIdleKib, f.rssAfterKib, f.rssAtRateKib);
  return [
    `max throughput (median of ${f.webhook.length} rounds, ${f.connections} connections):`,
    `  bare    ${f.bareRps.toFixed(0).padStart(6)} req/s, p50 ${lat(f.bare, 'p50')}, p99 ${lat(f.bare, 'p99')}`,
    `  webhook ${f.webhookRps.toFixed(0).padStart(6)} req/s, p50 ${lat(f.webhook, 'p50')}, p99 ${lat(f.webhook, 'p99')}`,
    `  ratio webhook/bare ${f.ratio.toFixed(2)} (target >= ${t.ratio}: ${verdict(f.ratio >= t.ratio)}); ` +
      `per server CPU-second ${f.ratioPerCpu.toFixed(2)}`,
    `  distinct Pods ${f.distinctRps.toFixed(0).padStart(6)} req/s, p50 ${lat(f.distinct, 'p50')}, p99 ${lat(f.distinct, 'p99')}`,
    `  ratio distinct/bare ${f.distinctRatio.toFixed(2)} (target >= ${t.ratio}: ${verdict(f.distinctRatio >= t.ratio)}); ` +
      `per server CPU-second ${f.distinctRatioPerCpu.toFixed(2)}`,
    `fixed rate ${f.rate} req/s (median of ${f.pacedWebhook.length} runs of ${f.rateSeconds} s):`,
    `  webhook p50 ${ms(f.fixedRateP50)}, p99 ${ms(f.fixedRateP99)} ` +
      `(target p99 < ${t.fixedRateP99Ms} ms: ${verdict(f.fixedRateP99 < t.fixedRateP99Ms)})`,
    `  distinct p50 ${lat(f.pacedDistinct, 'p50')}, p99 ${lat(f.pacedDistinct, 'p99')} ` +
      `(target p99 < ${t.fixedRateP99Ms} ms: ${verdict(median(f.pacedDistinct.map((r) => r.latency.p99)) < t.fixedRateP99Ms)})`,
    `  bare    p50 ${lat(f.pacedBare, 'p50')}, p99 ${lat(f.pacedBare, 'p99')}`,
    `  quietest runs (least CPU used by other processes): ${quietest(f.pacedWebhook, 'webhook')}; ${quietest(f.pacedBare, 'bare')}`,
    `webhook resident memory (VmRSS): ${mb(f.rssReadyKib)} when ready, ${mb(f.rssIdleKib)} idle ${f.idleSeconds} s ` +
      `after start, ${mb(f.rssAtRateKib)} at the end of ${f.rate} req/s, ${mb(f.rssAfterKib)} idle ${f.idleSeconds} s ` +
      `after the load, peak under saturation (VmHWM) ${mb(f.rssPeakKib)} ` +
      `(target < ${t.rssMb} MB: ${verdict((rssWorst * 1024) / 1e6 < t.rssMb)})`,
    `webhook log: ${f.webhookLogProblems} warn/error lines`,
  ];
}

if (isMain(import.meta.url)) {
  runWebhookThroughput().catch((error: unknown) => {
    process.stderr.write(
      `webhook-throughput: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
