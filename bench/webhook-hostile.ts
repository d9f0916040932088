// Webhook memory under hostile load (issue 12), and the API server's calls under idle, slow and
// lying clients (issue 25).
//
//   npx tsx bench/webhook-hostile.ts
//
// The real webhook (`rtb webhook`, compiled by tsc, plain node, NODE_OPTIONS as the rendered
// Deployment sets them) serves a real local cluster's caches in its own process. A load process
// drives each hostile mix of issue 12 at it (concurrent connections posting the body again and
// again as fast as they are answered) while it sends valid AdmissionReviews of the seed Pod at a
// fixed rate, as the API server would; the webhook's VmRSS is sampled from /proc/<pid>/status
// and its peak (VmHWM, reset before each mix) read after it, then again after idling. The
// baseline, in the same run: the same mixes against a bare node:https server in its own process
// that reads every body without a bound (what the webhook did before), and the webhook with
// valid requests only. The figures are printed, never asserted.
//
// Then, through the API server: the webhook is registered by URL (failing open, as rendered) and
// Pods are created at a fixed rate while connections of each hostile shape of
// test/support/hostile-clients.ts hold its port (each shape alone, then all at once), next to the
// same creates with no hostile client (the baseline); a create counts when the Pod is stored
// mutated, that is when the webhook answered within the registration's timeout.
//
// Environment (for trial runs): BENCH_HOSTILE_SECONDS (15), BENCH_IDLE_SECONDS (10),
// BENCH_VALID_RATE (20), BENCH_HOSTILE_MIXES (all; comma-separated names, e.g. big-200,namespace;
// `none` for none), BENCH_APISERVER_SECONDS (20, 0 skips the phase), BENCH_APISERVER_RATE (10
// creates/s), BENCH_HOSTILE_PER_SHAPE (200).
import type { V1Pod } from '@kubernetes/client-node';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import { ControlPlane } from '../src/envtest/control-plane.js';
import { renderWebhookManifests } from '../src/render/webhook-manifests.js';
import { WEBHOOK_NODE_OPTIONS } from '../src/render/webhook-deployment.js';
import { envNumber, isMain, say as print } from './support/env.js';
import {
  mutatedShare,
  runApiServerPhases,
  type ApiServerPhase,
} from './support/hostile-through-apiserver.js';
import type { HostileConfig, HostileResult, Outcomes, ValidOutcomes } from './support/load-hostile.js';
import { cpuSeconds, machineCpuSeconds, memoryKib, resetPeakMemory } from './support/proc.js';
import { buildChildren, canPin, pinToCpu, runNode, scratchDir, sleep } from './support/processes.js';
import { describeLatency, mb, verdict } from './support/stats.js';
import {
  admissionReviewFor,
  defaultedSeedPod,
  post,
  prepareWebhookCluster,
  startBareServer,
  startWebhookProcess,
  type ServerProcess,
} from './support/webhook-under-test.js';

/** Targets: issue 12 (memory under the mixes), issue 25 (calls answered, the Deployment's limit). */
export const HOSTILE_TARGETS = { rssMb: 200, mutatedShare: 0.99, limitMib: 256 } as const;

const SERVER_CPU = 1;
const LOAD_CPU = 0;
const VALID_MARKER = 'VALID0000000';

/** One hostile mix: a body and how many connections post it. */
interface Mix {
  readonly name: string;
  readonly label: string;
  readonly concurrency: number;
  readonly body: () => string;
}

/** One mix against one server. */
export interface HostileRun {
  readonly mix: string;
  readonly label: string;
  readonly server: 'webhook' | 'bare';
  readonly bodyBytes: number;
  /** VmHWM over the run (VmRSS sampled every 25 ms when the peak cannot be reset). */
  readonly peakKib: number;
  readonly afterIdleKib: number;
  readonly hostile: Outcomes;
  readonly valid: ValidOutcomes;
  /** Cores the server used, and the whole machine (load processes and other tenants included). */
  readonly serverCpu: number;
  readonly machineCpu: number;
}

/** What the benchmark measured. */
export interface HostileFigures {
  readonly seconds: number;
  readonly idleSeconds: number;
  readonly validRate: number;
  readonly readyKib: number;
  readonly runs: readonly HostileRun[];
  readonly nodeOptions: string;
  /** Through the API server (empty when skipped). */
  readonly apiServer: readonly ApiServerPhase[];
  readonly apiServerRate: number;
  readonly apiServerSeconds: number;
}

/** The AdmissionReview of `pod` as a hostile client might post it, namespace and all. */
const review = (pod: unknown, namespace = 'default'): string =>
  admissionReviewFor(pod as V1Pod, 'hostile-1', namespace);

function mixes(seed: Record<string, unknown>): Mix[] {
  const padded = (bytes: number): string => {
    const base = review({ ...seed, metadata: { name: 'big', annotations: { pad: '' } } });
    return review({
      ...seed,
      metadata: { name: 'big', annotations: { pad: 'x'.repeat(bytes - base.length) } },
    });
  };
  const containers = Array.from({ length: 30_000 }, (_, i) => ({ name: `c${i}`, image: 'replace.me/x' }));
  const nested = (bytes: number): string => {
    const base = review({ spec: 0 });
    const depth = Math.floor((bytes - base.length) / 2);
    return base.replace('"spec":0', `"spec":${'['.repeat(depth)}${']'.repeat(depth)}`);
  };
  return [
    {
      name: 'big-200',
      label: '200 × 3.9 MB AdmissionReview',
      concurrency: 200,
      body: () => padded(3_900_000),
    },
    {
      name: 'big-100',
      label: '100 × 3.9 MB AdmissionReview',
      concurrency: 100,
      body: () => padded(3_900_000),
    },
    {
      name: 'containers',
      label: '20 × Pod of 30,000 containers',
      concurrency: 20,
      body: () => review({ metadata: { name: 'wide' }, spec: { containers } }),
    },
    {
      name: 'namespace',
      label: '20 × 3 MB namespace name',
      concurrency: 20,
      body: () => review(seed, 'n'.repeat(3_000_000)),
    },
    { name: 'nested', label: '20 × 3.9 MB of nested arrays', concurrency: 20, body: () => nested(3_900_000) },
  ];
}

/** Runs the benchmark; prints as it goes and returns the figures. */
export async function runWebhookHostile(say: (line: string) => void = print): Promise<HostileFigures> {
  const seconds = envNumber('BENCH_HOSTILE_SECONDS', 15);
  const idleSeconds = envNumber('BENCH_IDLE_SECONDS', 10);
  const validRate = envNumber('BENCH_VALID_RATE', 20);
  const only = process.env.BENCH_HOSTILE_MIXES?.split(',').map((s) => s.trim());
  const apiServerSeconds = envNumber('BENCH_APISERVER_SECONDS', 20);
  const apiServerRate = envNumber('BENCH_APISERVER_RATE', 10);
  const perShape = envNumber('BENCH_HOSTILE_PER_SHAPE', 200);

  say('== webhook under hostile load (issue 12) ==');
  const scripts = buildChildren(say);
  const scratch = await scratchDir('rtb-bench-hostile-');
  const dir = scratch.dir;
  let plane: ControlPlane | undefined;
  const servers: ServerProcess[] = [];
  try {
    plane = await ControlPlane.start({ clusters: ['hostile'] });
    const { cluster, kc, tls } = await prepareWebhookCluster(plane, 'hostile', dir, say);
    // BENCH_NODE_OPTIONS: more node options for trials (after the rendered ones, so they win).
    const extra = (process.env.BENCH_NODE_OPTIONS ?? '').split(' ').filter(Boolean);
    const webhook = await startWebhookProcess(scripts, cluster, tls, dir, extra);
    servers.push(webhook);
    const pinned = canPin();
    if (pinned) pinToCpu(webhook.pid, SERVER_CPU);
    const readyKib = memoryKib(webhook.pid).rss;
    say(
      `webhook: rtb webhook, node options ${[WEBHOOK_NODE_OPTIONS, ...extra].join(' ')}, pid ${webhook.pid}; ` +
        `VmRSS when ready ${mb(readyKib)}`,
    );

    const seedPod = await defaultedSeedPod(kc);
    const validFile = join(dir, 'valid.json');
    // The marker becomes a counter in the uid and the name: every request is decided anew.
    const valid = admissionReviewFor(
      { ...seedPod, metadata: { ...seedPod.metadata, name: `pod-${VALID_MARKER}` } },
      VALID_MARKER,
    );
    await writeFile(validFile, valid);
    // The first request creates the pull Secret's copy; its answer is the bare server's.
    const first = await post(webhook.url, valid, tls.caPem);
    if (first.status !== 200) throw new Error(`the webhook answered ${first.status}: ${first.body}`);
    const responseFile = join(dir, 'response.json');
    await writeFile(responseFile, first.body);
    const bare = await startBareServer(scripts, tls, responseFile, dir, true);
    servers.push(bare);
    if (pinned) pinToCpu(bare.pid, SERVER_CPU);
    say(`baseline: bare node:https server reading every body without a bound, pid ${bare.pid}`);
    say(
      `each run: ${seconds} s of the mix (closed loop) with ${validRate} valid AdmissionReviews/s of the seed Pod ` +
        `(${Buffer.byteLength(valid)} B, a new name each), then ${idleSeconds} s idle` +
        (pinned ? `; servers on CPU ${SERVER_CPU}, load on CPU ${LOAD_CPU}` : ''),
    );

    const runOne = async (
      target: ServerProcess,
      server: 'webhook' | 'bare',
      mix: Mix | undefined,
      bodyFile: string | undefined,
      bodyBytes: number,
    ): Promise<HostileRun> => {
      const name = `${server}-${mix?.name ?? 'valid-only'}`;
      const configOf = async (role: string, part: Partial<HostileConfig>): Promise<HostileConfig> => {
        const config: HostileConfig = {
          url: target.url,
          caFile: tls.caFile,
          seconds,
          resultFile: join(dir, `${name}-${role}.result.json`),
          ...part,
        };
        await writeFile(join(dir, `${name}-${role}.json`), JSON.stringify(config));
        return config;
      };
      const validConfig = await configOf('valid', {
        valid: { bodyFile: validFile, marker: VALID_MARKER, rate: validRate },
      });
      const hostileConfig =
        mix && bodyFile
          ? await configOf('hostile', { hostile: { bodyFile, concurrency: mix.concurrency } })
          : undefined;
      const resettable = resetPeakMemory(target.pid);
      const cpu0 = { server: cpuSeconds(target.pid), machine: machineCpuSeconds().busy, at: Date.now() };
      let sampled = memoryKib(target.pid).rss;
      const sampler = setInterval(() => {
        sampled = Math.max(sampled, memoryKib(target.pid).rss);
      }, 25);
      try {
        // The hostile load on the load CPU; the light valid one wherever the kernel puts it.
        await Promise.all([
          runNode(`load-${name}-valid`, scripts.loadHostile, [join(dir, `${name}-valid.json`)], dir),
          ...(hostileConfig
            ? [
                runNode(
                  `load-${name}-hostile`,
                  scripts.loadHostile,
                  [join(dir, `${name}-hostile.json`)],
                  dir,
                  pinned ? LOAD_CPU : undefined,
                ),
              ]
            : []),
        ]);
      } finally {
        clearInterval(sampler);
      }
      const elapsed = (Date.now() - cpu0.at) / 1000;
      const serverCpu = (cpuSeconds(target.pid) - cpu0.server) / elapsed;
      const machineCpu = (machineCpuSeconds().busy - cpu0.machine) / elapsed;
      const resultOf = async (config: HostileConfig | undefined): Promise<HostileResult> =>
        config ? (JSON.parse(await readFile(config.resultFile, 'utf8')) as HostileResult) : {};
      const validResult = (await resultOf(validConfig)).valid;
      if (!validResult) throw new Error(`${name}: the valid load wrote no result`);
      const hostileResult = (await resultOf(hostileConfig)).hostile ?? { sent: 0, answers: {} };
      const peakKib = resettable ? Math.max(sampled, memoryKib(target.pid).peak) : sampled;
      await sleep(idleSeconds * 1000);
      const run: HostileRun = {
        mix: mix?.name ?? 'valid-only',
        label: mix?.label ?? 'valid requests only',
        server,
        bodyBytes,
        peakKib,
        afterIdleKib: memoryKib(target.pid).rss,
        hostile: hostileResult,
        valid: validResult,
        serverCpu,
        machineCpu,
      };
      for (const line of describeRun(run)) say(line);
      return run;
    };

    const runs: HostileRun[] = only?.includes('none')
      ? []
      : [await runOne(webhook, 'webhook', undefined, undefined, 0)];
    for (const mix of mixes(seedPod as unknown as Record<string, unknown>)) {
      if (only && !only.includes(mix.name)) continue;
      const body = mix.body();
      const bodyFile = join(dir, `${mix.name}.json`);
      await writeFile(bodyFile, body);
      const bytes = Buffer.byteLength(body);
      runs.push(await runOne(webhook, 'webhook', mix, bodyFile, bytes));
      runs.push(await runOne(bare, 'bare', mix, bodyFile, bytes));
    }
    let apiServer: ApiServerPhase[] = [];
    if (apiServerSeconds > 0) {
      // Registered only now: the seed Pod above is read as the API server defaults it, unmutated.
      const manifests = renderWebhookManifests({
        image: 'unused',
        url: webhook.url,
        caBundlePem: tls.caPem,
        failurePolicy: 'Ignore',
      });
      await kc
        .makeApiClient(AdmissionregistrationV1Api)
        .createMutatingWebhookConfiguration({ body: manifests.mutatingWebhookConfiguration });
      await sleep(3_000);
      say(
        `through the API server: ${apiServerRate} Pod creates/s for ${apiServerSeconds} s per phase, ` +
          `${perShape} connections of each shape (renewed as the webhook closes them); registration timeoutSeconds ` +
          `${String(manifests.mutatingWebhookConfiguration.webhooks?.[0]?.timeoutSeconds)}, failurePolicy Ignore`,
      );
      apiServer = await runApiServerPhases(
        {
          kc,
          webhookPid: webhook.pid,
          webhookPort: Number(new URL(webhook.url).port),
          perShape,
          seconds: apiServerSeconds,
          rate: apiServerRate,
        },
        say,
      );
    }
    const figures: HostileFigures = {
      seconds,
      idleSeconds,
      validRate,
      readyKib,
      runs,
      nodeOptions: [WEBHOOK_NODE_OPTIONS, ...extra].join(' '),
      apiServer,
      apiServerRate,
      apiServerSeconds,
    };
    say('-- webhook under hostile load: result --');
    for (const line of hostileSummary(figures)) say(line);
    return figures;
  } finally {
    for (const s of servers.reverse()) await s.proc.stop();
    await plane?.stop();
    await scratch.remove();
  }
}

function answers(a: Readonly<Record<string, number>>): string {
  return Object.entries(a)
    .sort((x, y) => y[1] - x[1])
    .map(([k, v]) => `${k} ×${v}`)
    .join(', ');
}

function describeRun(r: HostileRun): string[] {
  const v = r.valid;
  return [
    `  ${r.server.padEnd(7)} ${r.label}${r.bodyBytes > 0 ? ` (${(r.bodyBytes / 1e6).toFixed(2)} MB each)` : ''}: ` +
      `peak VmRSS ${mb(r.peakKib)}, ${mb(r.afterIdleKib)} after idling; ` +
      `CPU: server ${r.serverCpu.toFixed(2)}, machine ${r.machineCpu.toFixed(2)} cores busy`,
    ...(r.hostile.sent > 0
      ? [`          hostile: ${r.hostile.sent} sent; ${answers(r.hostile.answers)}`]
      : []),
    `          valid: ${v.sent} sent, ${v.correct} answered correctly, ${v.inTime} within 5 s; ` +
      `${describeLatency(v.latency, ['p50', 'p99', 'max'])}; ${answers(v.answers)}`,
  ];
}

/** The result lines with the target. */
export function hostileSummary(f: HostileFigures): string[] {
  const webhook = f.runs.filter((r) => r.server === 'webhook');
  const worst = Math.max(f.readyKib, ...webhook.map((r) => Math.max(r.peakKib, r.afterIdleKib)));
  const lines =
    webhook.length === 0
      ? []
      : [
          `webhook (NODE_OPTIONS ${f.nodeOptions}) VmRSS when ready ${mb(f.readyKib)}; ` +
            `each mix ${f.seconds} s with ${f.validRate} valid requests/s, then ${f.idleSeconds} s idle:`,
          `  ${'mix'.padEnd(32)} ${'webhook peak'.padStart(13)} ${'after idle'.padStart(11)} ${'bare peak'.padStart(10)} ${'after idle'.padStart(11)}   valid answered (webhook): correct / sent, p50, p99`,
        ];
  for (const r of webhook) {
    const b = f.runs.find((x) => x.server === 'bare' && x.mix === r.mix);
    const v = r.valid;
    lines.push(
      `  ${r.label.padEnd(32)} ${mb(r.peakKib).padStart(13)} ${mb(r.afterIdleKib).padStart(11)} ` +
        `${(b ? mb(b.peakKib) : '-').padStart(10)} ${(b ? mb(b.afterIdleKib) : '-').padStart(11)}   ` +
        `${v.correct} / ${v.sent}, ${describeLatency(v.latency, ['p50', 'p99'])}`,
    );
  }
  if (webhook.length > 0)
    lines.push(
      `  webhook VmRSS at most ${mb(worst)} (target < ${HOSTILE_TARGETS.rssMb} MB: ${verdict((worst * 1024) / 1e6 < HOSTILE_TARGETS.rssMb)})`,
    );
  const baseline = f.apiServer.find((p) => p.name === 'baseline');
  const hostile = f.apiServer.filter((p) => p.name !== 'baseline');
  if (baseline && hostile.length > 0) {
    const pct = (p: ApiServerPhase): string => `${(mutatedShare(p) * 100).toFixed(1)} %`;
    lines.push(
      `through the API server (${f.apiServerRate} creates/s, ${f.apiServerSeconds} s a phase): ` +
        `Pods stored mutated, baseline ${baseline.mutated} / ${baseline.creates} (${pct(baseline)}), ` +
        `create p99 ${baseline.latency.p99.toFixed(0)} ms, peak VmRSS ${mb(baseline.peakKib)}`,
    );
    for (const p of hostile)
      lines.push(
        `  ${p.name.padEnd(15)} ${String(p.connections).padStart(5)} connections: ${p.mutated} / ${p.creates} (${pct(p)}), ` +
          `create p99 ${p.latency.p99.toFixed(0)} ms, peak VmRSS ${mb(p.peakKib)}`,
      );
    const worstShare = Math.min(...hostile.map(mutatedShare));
    const worstPeak = Math.max(...f.apiServer.map((p) => p.peakKib));
    lines.push(
      `  worst share ${(worstShare * 100).toFixed(1)} % (target >= ${HOSTILE_TARGETS.mutatedShare * 100} %: ` +
        `${verdict(worstShare >= HOSTILE_TARGETS.mutatedShare)}); peak VmRSS ${mb(worstPeak)} ` +
        `(limit ${HOSTILE_TARGETS.limitMib}Mi: ${verdict(worstPeak < HOSTILE_TARGETS.limitMib * 1024)})`,
    );
  }
  return lines;
}

if (isMain(import.meta.url)) {
  runWebhookHostile().catch((error: unknown) => {
    process.stderr.write(
      `webhook-hostile: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
