// Pod creation latency through a real kube-apiserver, without and with the webhook (issue 3).
//
//   npx tsx bench/pod-create-latency.ts
//
// Three clusters of one local control plane (same binaries, flags and etcd), each holding the
// webhook's sources:
//   plain   no webhook registered;
//   hooked  the webhook registered (the MutatingWebhookConfiguration from renderWebhookManifests
//           with `url` and `caBundle`, failurePolicy Fail so a failing webhook shows up as failed
//           creates), served by `rtb webhook` (compiled, plain node) in its own process;
//   echo    the same registration, served by a bare node:https server in its own process that
//           answers the webhook's own patch for the seed Pod without doing any work: what any
//           mutating webhook with this patch costs the API server.
// Creates are sequential, one keep-alive connection per cluster, each Pod a fresh name, the seed
// Pod in namespace default, interleaved request by request with the order rotating, so every
// series sees the same noise of a shared machine. A fourth series creates the already mutated
// Pod on `plain`: the cost of storing the bigger Pod, apart from calling a webhook. Before any
// webhook is registered an A/A calibration measures how much the clusters differ by themselves.
// The figures are printed, never asserted.
//
// Environment (for trial runs): BENCH_PODS (300), BENCH_WARMUP_PODS (50), BENCH_CALIBRATION_PODS (100).
import type { V1Pod } from '@kubernetes/client-node';
import { readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { ControlPlane, type LocalCluster } from '../src/envtest/control-plane.js';
import { applyObjects } from '../src/kube/apply.js';
import { MUTATING_WEBHOOK_NAME } from '../src/api/runtime-names.js';
import { renderWebhookManifests } from '../src/render/webhook-manifests.js';
import { envNumber, isMain, say as print } from './support/env.js';
import { meanCallMs, webhookCallTotals } from './support/apiserver-webhook-metric.js';
import { PodClient } from './support/pod-client.js';
import { machineCpuSeconds } from './support/proc.js';
import { buildChildren, scratchDir } from './support/processes.js';
import {
  awaitAdmission,
  interleavedCreates,
  podNamed,
  type CreateSeries,
} from './support/interleaved-creates.js';
import { describeLatency, ms, verdict, type LatencySummary } from './support/stats.js';
import {
  admissionReviewFor,
  applyWebhookSources,
  defaultedSeedPod,
  patchOf,
  post,
  seedPod,
  startBareServer,
  startWebhookProcess,
  writeServingTls,
  type ServerProcess,
  type ServingTls,
} from './support/webhook-under-test.js';

/** Target of issue 3: what the webhook may add to the median Pod creation. */
export const POD_CREATE_TARGET_MS = 1.5;

/** The webhook's own request duration histogram over the measurement. */
export interface ServerSide {
  readonly count: number;
  readonly meanMs: number;
  /** Cumulative share of requests at or under each bucket bound (ms). */
  readonly buckets: readonly { readonly leMs: number; readonly share: number }[];
}

/** What the Pod creation benchmark measured. */
export interface PodCreateFigures {
  readonly pods: number;
  readonly calibration: {
    readonly plain: LatencySummary;
    readonly hooked: LatencySummary;
    readonly echo: LatencySummary;
  };
  readonly without: LatencySummary;
  readonly withWebhook: LatencySummary;
  readonly withEcho: LatencySummary;
  /** The mutated Pod created on the cluster without a webhook. */
  readonly mutatedWithout: LatencySummary;
  /** The seed Pod with generateName on the cluster with the webhook. */
  readonly replicas: LatencySummary;
  readonly addedMedianReplicas: number;
  /** The API server's own mean time per webhook call (request, answer, patch applied), hooked and echo. */
  readonly apiserverCallMs: { readonly hooked: number; readonly echo: number };
  /** Median with the webhook minus median without. */
  readonly addedMedian: number;
  /** The same, less the two clusters' own difference measured in the calibration. */
  readonly addedMedianCalibrated: number;
  readonly webhookSide: ServerSide;
  /** What the echo server counted: did the API server keep its connection to the webhook alive? */
  readonly echoConnections: string;
  /** Cores the whole machine used during the measurement (the clusters, the servers and anything else). */
  readonly machineCpu: number;
}

/** Runs the benchmark; prints as it goes and returns the figures. */
export async function runPodCreateLatency(say: (line: string) => void = print): Promise<PodCreateFigures> {
  const pods = envNumber('BENCH_PODS', 300);
  const warmup = envNumber('BENCH_WARMUP_PODS', 50);
  const calibrationPods = envNumber('BENCH_CALIBRATION_PODS', 100);

  say('== Pod creation latency (issue 3) ==');
  const scripts = buildChildren(say);
  const scratch = await scratchDir('rtb-bench-pods-');
  const dir = scratch.dir;
  let plane: ControlPlane | undefined;
  const servers: ServerProcess[] = [];
  const clients: PodClient[] = [];
  try {
    plane = await ControlPlane.start({ clusters: ['plain', 'hooked', 'echo'] });
    say(
      `clusters plain, hooked, echo: kube-apiserver ${plane.binaries.kubernetesVersion}, ` +
        `etcd ${plane.binaries.etcdVersion}, node ${process.version}`,
    );
    const plain = plane.cluster('plain');
    const hooked = plane.cluster('hooked');
    const echo = plane.cluster('echo');
    for (const c of [plain, hooked, echo]) await applyWebhookSources(c.kubeConfig());
    const tls = await writeServingTls(dir);
    const webhook = await startWebhookProcess(scripts, hooked, tls, dir);
    servers.push(webhook);

    // The webhook's answer for the seed Pod, which the echo server repeats.
    const review = admissionReviewFor(await defaultedSeedPod(echo.kubeConfig()));
    const answer = await post(webhook.url, review, tls.caPem);
    patchOf(answer.body);
    const responseFile = join(dir, 'admission-response.json');
    await writeFile(responseFile, answer.body);
    const echoServer = await startBareServer(scripts, tls, responseFile, dir, true);
    servers.push(echoServer);
    say(`webhook: rtb webhook, pid ${webhook.pid}, for hooked; echo server, pid ${echoServer.pid}, for echo`);

    const client = async (c: LocalCluster): Promise<PodClient> => {
      const made = await PodClient.forCluster(c.kubeConfig());
      clients.push(made);
      return made;
    };
    const [plainClient, hookedClient, echoClient] = [
      await client(plain),
      await client(hooked),
      await client(echo),
    ];
    const template = seedPod();
    const interleaved = interleavedCreates();

    say(
      `calibration (no webhook registered): ${warmup} warm-up + ${calibrationPods} creates per cluster, interleaved`,
    );
    const calibrationSeries: CreateSeries[] = [plainClient, hookedClient, echoClient].map((c) => ({
      client: c,
      pod: template,
      mutatedExpected: false,
    }));
    await interleaved(warmup, calibrationSeries);
    const [calPlain, calHooked, calEcho] = await interleaved(calibrationPods, calibrationSeries);
    say(`  plain  ${describeLatency(calPlain!, ['p50', 'p90', 'p99'])}`);
    say(`  hooked ${describeLatency(calHooked!, ['p50', 'p90', 'p99'])}`);
    say(`  echo   ${describeLatency(calEcho!, ['p50', 'p90', 'p99'])}`);

    await register(hooked, webhook, tls, hookedClient, template);
    await register(echo, echoServer, tls, echoClient, template);
    say('registered (failurePolicy Fail) on hooked and echo; both API servers call their webhook');

    // The Pod a cluster stores when the webhook mutated the seed Pod.
    const sample = await hookedClient.create('default', podNamed(template, 'rtb-bench-sample'), true);
    const mutatedPod: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { labels: sample.pod.metadata?.labels, annotations: sample.pod.metadata?.annotations },
      spec: sample.pod.spec,
    };

    const series: CreateSeries[] = [
      { client: plainClient, pod: template, mutatedExpected: false },
      { client: hookedClient, pod: template, mutatedExpected: true },
      { client: echoClient, pod: template, mutatedExpected: true },
      { client: plainClient, pod: mutatedPod, mutatedExpected: true },
      { client: hookedClient, pod: template, mutatedExpected: true, generateName: 'bench-replica-' },
    ];
    say(
      `measurement: ${warmup} warm-up + ${pods} creates per series, interleaved: seed Pod on plain, on hooked, ` +
        `on echo, the mutated Pod on plain, and the seed Pod with generateName on hooked (as a ReplicaSet ` +
        `creates them: alike at admission but for the uid)`,
    );
    await interleaved(warmup, series);
    const before = await durationHistogram(webhook.url, tls.caPem);
    const callsBefore = await Promise.all(
      [hookedClient, echoClient].map((c) => webhookCallTotals(c, MUTATING_WEBHOOK_NAME)),
    );
    const machine0 = machineCpuSeconds();
    const [without, withWebhook, withEcho, mutatedWithout, replicas] = await interleaved(pods, series);
    const machine1 = machineCpuSeconds();
    const after = await durationHistogram(webhook.url, tls.caPem);
    const callsAfter = await Promise.all(
      [hookedClient, echoClient].map((c) => webhookCallTotals(c, MUTATING_WEBHOOK_NAME)),
    );
    await echoServer.proc.stop();
    const echoLog = await readFile(echoServer.proc.logPath, 'utf8');
    const echoConnections = /served \d+ requests on \d+ TLS connections/.exec(echoLog)?.[0] ?? 'unknown';

    const addedMedian = withWebhook!.p50 - without!.p50;
    const figures: PodCreateFigures = {
      pods,
      calibration: { plain: calPlain!, hooked: calHooked!, echo: calEcho! },
      without: without!,
      withWebhook: withWebhook!,
      withEcho: withEcho!,
      mutatedWithout: mutatedWithout!,
      replicas: replicas!,
      addedMedianReplicas: replicas!.p50 - without!.p50,
      apiserverCallMs: {
        hooked: meanCallMs(callsBefore[0]!, callsAfter[0]!),
        echo: meanCallMs(callsBefore[1]!, callsAfter[1]!),
      },
      addedMedian,
      addedMedianCalibrated: addedMedian - (calHooked!.p50 - calPlain!.p50),
      webhookSide: serverSide(before, after),
      echoConnections,
      machineCpu: (machine1.busy - machine0.busy) / ((machine1.total - machine0.total) / cpus().length),
    };
    say('-- Pod creation latency: result --');
    for (const line of podCreateSummary(figures)) say(line);
    return figures;
  } finally {
    for (const c of clients) c.close();
    for (const s of servers.reverse()) await s.proc.stop();
    await plane?.stop();
    await scratch.remove();
  }
}

/** The result lines with the target. */
export function podCreateSummary(f: PodCreateFigures): string[] {
  const keys = ['p50', 'p90', 'p99'] as const;
  const cal = f.calibration;
  const side = f.webhookSide;
  return [
    `Pod creation, ${f.pods} sequential creates per series (interleaved; the machine was busy ` +
      `${f.machineCpu.toFixed(2)} of ${cpus().length} cores meanwhile):`,
    `  without webhook (plain)             ${describeLatency(f.without, keys)}`,
    `  with the webhook (hooked)           ${describeLatency(f.withWebhook, keys)}`,
    `  with a no-work echo webhook (echo)  ${describeLatency(f.withEcho, keys)}`,
    `  the mutated Pod, no webhook (plain) ${describeLatency(f.mutatedWithout, keys)}`,
    `  generateName Pods, webhook (hooked) ${describeLatency(f.replicas, keys)}; added median ` +
      `${ms(f.addedMedianReplicas)} (target < ${POD_CREATE_TARGET_MS} ms: ${verdict(f.addedMedianReplicas < POD_CREATE_TARGET_MS)})`,
    `  added median ${ms(f.addedMedian)} (target < ${POD_CREATE_TARGET_MS} ms: ${verdict(f.addedMedian < POD_CREATE_TARGET_MS)}); ` +
      `less the clusters' own difference before registration (p50 plain ${ms(cal.plain.p50)}, ` +
      `hooked ${ms(cal.hooked.p50)}, echo ${ms(cal.echo.p50)}): ${ms(f.addedMedianCalibrated)}`,
    `  where the median goes: storing the bigger mutated Pod ${ms(f.mutatedWithout.p50 - f.without.p50)}; ` +
      `the API server calling a webhook and applying the patch ${ms(f.withEcho.p50 - f.mutatedWithout.p50)}; ` +
      `our webhook over the no-work one ${ms(f.withWebhook.p50 - f.withEcho.p50)}`,
    `  the webhook's own timer (admission metric): mean ${ms(side.meanMs)} over ${side.count} requests; ` +
      side.buckets.map((b) => `<= ${b.leMs} ms ${(b.share * 100).toFixed(0)}%`).join(', '),
    `  the API server's own timer per webhook call (apiserver_admission_webhook_admission_duration_seconds, ` +
      `mean): hooked ${ms(f.apiserverCallMs.hooked)}, echo ${ms(f.apiserverCallMs.echo)}`,
    `  the echo server ${f.echoConnections} (warm-up and probes included)`,
  ];
}

/** Registers a webhook on a cluster and waits until its API server calls it. */
async function register(
  cluster: LocalCluster,
  server: ServerProcess,
  tls: ServingTls,
  client: PodClient,
  template: V1Pod,
  timeoutMs = 30_000,
): Promise<void> {
  const registration = renderWebhookManifests({
    image: 'local',
    url: server.url,
    caBundlePem: tls.caPem,
    failurePolicy: 'Fail',
  }).mutatingWebhookConfiguration;
  await applyObjects(cluster.kubeConfig(), [registration]);
  await awaitAdmission(
    { client, pod: template, mutatedExpected: true },
    `the webhook of ${cluster.name}`,
    timeoutMs,
  );
}

interface Histogram {
  readonly sum: number;
  readonly count: number;
  readonly buckets: ReadonlyMap<number, number>;
}

/** `rtb_webhook_request_duration_seconds` of the webhook, all results added up. */
function durationHistogram(mutateUrl: string, caPem: string): Promise<Histogram> {
  return new Promise((resolve, reject) => {
    const req = request(new URL('/metrics', mutateUrl), { ca: caPem }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let sum = 0;
        let count = 0;
        const buckets = new Map<number, number>();
        for (const line of Buffer.concat(chunks).toString('utf8').split('\n')) {
          const m = /^rtb_webhook_request_duration_seconds_(sum|count|bucket)\{([^}]*)\} (\S+)$/.exec(line);
          if (!m) continue;
          const value = Number(m[3]);
          if (m[1] === 'sum') sum += value;
          else if (m[1] === 'count') count += value;
          else {
            const le = /le="([^"]+)"/.exec(m[2] ?? '')?.[1];
            if (le && le !== '+Inf') buckets.set(Number(le), (buckets.get(Number(le)) ?? 0) + value);
          }
        }
        resolve({ sum, count, buckets });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

function serverSide(before: Histogram, after: Histogram): ServerSide {
  const count = after.count - before.count;
  const shown = [0.00025, 0.0005, 0.001, 0.0025];
  return {
    count,
    meanMs: ((after.sum - before.sum) / Math.max(1, count)) * 1000,
    buckets: shown.map((le) => ({
      leMs: le * 1000,
      share: ((after.buckets.get(le) ?? 0) - (before.buckets.get(le) ?? 0)) / Math.max(1, count),
    })),
  };
}

if (isMain(import.meta.url)) {
  runPodCreateLatency().catch((error: unknown) => {
    process.stderr.write(
      `pod-create-latency: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
