// Issue 15: a trust-bundle change on a runtime with many stale owners (API objects only, no
// kubelet: the benchmark plays the deployment controller, completing each rollout the moment it
// sees the patch, and replacing the Pod with one stamped with the new hash).
//
// One API server; OWNERS Deployments (1 replica, a ReplicaSet, a Pod stamped with the old
// bundle); filler Pods up to PODS in all: half stamped current (our label: in the restarter's
// cache), half plain (no label: never listed). Then, in one run:
// - memory: `rtb webhook --no-trust-restart` (the baseline) and `rtb webhook` with the restarter
//   active, each alone on the same cluster, RSS once synced;
// - time until every owner was patched at `--restart-concurrency` (restart delay 0), and the
//   restarter's API requests per owner (its own counter);
// - the floor: the same patches issued by the benchmark itself, as many at once, each waiting
//   for the same simulated rollout (what pacing costs at least).
// Prints figures; asserts nothing.
//
//   npx tsx bench/trust-restart.ts   BENCH_RESTART_OWNERS=500 BENCH_RESTART_PODS=10000 BENCH_RESTART_CONCURRENCY=2
import { request } from 'node:https';
import { CTB_HASH_ANNOTATION, CTB_MOUNTED_LABEL } from '../src/api/trust-stamp.js';
import { ControlPlane, type LocalCluster } from '../src/envtest/control-plane.js';
import { KubeListWatch } from '../src/kube/list-watch.js';
import { Reflector } from '../src/kube/reflector.js';
import { newBundleText, putBundle } from '../test/support/trust-workloads.js';
import { metricValue } from './support/cpu-groups.js';
import { envNumber, isMain, say as print } from './support/env.js';
import { KeepAliveClient } from './support/keep-alive-client.js';
import { forEachLimited } from './support/limited.js';
import { memoryKib } from './support/proc.js';
import { buildChildren, scratchDir, sleep } from './support/processes.js';
import { mb } from './support/stats.js';
import {
  prepareWebhookCluster,
  startWebhookProcess,
  type ServerProcess,
  type ServingTls,
} from './support/webhook-under-test.js';

const NS = 'bench';
const DEPLOYMENTS = `/apis/apps/v1/namespaces/${NS}/deployments`;

/** What the benchmark measured. */
export interface TrustRestartFigures {
  readonly owners: number;
  readonly pods: number;
  readonly concurrency: number;
  /** Bundle change until the last owner was patched, by the restarter. */
  readonly restarterMs: number;
  /** The same patches and rollouts issued by the benchmark itself. */
  readonly floorMs: number;
  /** RSS once synced: the webhook with the restarter active, and without it. */
  readonly restarterRssKib: number;
  readonly baselineRssKib: number;
  /** The restarter's API requests per owner, by call. */
  readonly requestsPerOwner: Readonly<Record<string, number>>;
}

interface Deployment {
  metadata?: { name?: string; uid?: string; generation?: number; annotations?: Record<string, string> };
  spec?: { replicas?: number; template?: { metadata?: { annotations?: Record<string, string> } } };
  status?: { observedGeneration?: number };
}

const podBody = (name: string, hash: string, labelled: boolean, owner?: object): object => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name,
    ...(labelled ? { labels: { [CTB_MOUNTED_LABEL]: 'true' } } : {}),
    annotations: { [CTB_HASH_ANNOTATION]: hash },
    ...(owner ? { ownerReferences: [owner] } : {}),
  },
  spec: { containers: [{ name: 'app', image: 'example.com/app:1' }] },
});

async function createObjects(
  client: KeepAliveClient,
  owners: number,
  pods: number,
  oldHash: string,
  newHash: string,
): Promise<void> {
  await client.request('POST', '/api/v1/namespaces', { metadata: { name: NS } });
  await forEachLimited([...Array(owners).keys()], 16, async (i) => {
    const name = `d-${i}`;
    const tpl = { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'x' }] } };
    const d = JSON.parse(
      await client.request('POST', DEPLOYMENTS, {
        metadata: { name },
        spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: tpl },
      }),
    ) as Deployment;
    const rs = JSON.parse(
      await client.request('POST', `/apis/apps/v1/namespaces/${NS}/replicasets`, {
        metadata: {
          name: `${name}-1`,
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'Deployment', name, uid: d.metadata?.uid, controller: true },
          ],
        },
        spec: { replicas: 1, selector: { matchLabels: { app: name } }, template: tpl },
      }),
    ) as Deployment;
    const owner = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      name: `${name}-1`,
      uid: rs.metadata?.uid,
      controller: true,
    };
    await client.request('POST', `/api/v1/namespaces/${NS}/pods`, podBody(`${name}-0`, oldHash, true, owner));
  });
  const filler = Math.max(0, pods - owners);
  await forEachLimited([...Array(filler).keys()], 16, async (i) => {
    // Half ours and current (cached by the restarter), half the cluster's other Pods.
    const labelled = i % 2 === 0;
    await client.request('POST', `/api/v1/namespaces/${NS}/pods`, podBody(`filler-${i}`, newHash, labelled));
  });
}

/**
 * The deployment controller and kubelet at zero latency: on a template change, the rollout is
 * reported complete and the Pod replaced by one stamped with the template's hash.
 */
function simulateRollouts(
  cluster: LocalCluster,
  client: KeepAliveClient,
  patchedAt: Map<string, number>,
): { readonly reflector: Reflector<Deployment>; stop(): Promise<void> } {
  const busy = new Set<string>();
  let stopped = false;
  const reflector = new Reflector<Deployment>({
    name: 'bench deployments',
    listerWatcher: new KubeListWatch<Deployment>(cluster.kubeConfig(), DEPLOYMENTS),
  });
  const complete = async (d: Deployment): Promise<void> => {
    const name = d.metadata?.name ?? '';
    const hash = d.spec?.template?.metadata?.annotations?.[CTB_HASH_ANNOTATION] ?? '';
    await client.request('PUT', `${DEPLOYMENTS}/${name}/status`, {
      ...d,
      status: {
        observedGeneration: d.metadata?.generation,
        replicas: 1,
        updatedReplicas: 1,
        readyReplicas: 1,
        availableReplicas: 1,
      },
    });
    const pod = `${name}-0`;
    const old = JSON.parse(await client.request('GET', `/api/v1/namespaces/${NS}/pods/${pod}`)) as {
      metadata?: { ownerReferences?: object[] };
    };
    await client.request('DELETE', `/api/v1/namespaces/${NS}/pods/${pod}?gracePeriodSeconds=0`);
    await client.request(
      'POST',
      `/api/v1/namespaces/${NS}/pods`,
      podBody(pod, hash, true, old.metadata?.ownerReferences?.[0]),
    );
  };
  reflector.addEventHandler({
    onUpdate: (_old, d) => {
      const name = d.metadata?.name ?? '';
      if ((d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0) || busy.has(name)) return;
      if (!patchedAt.has(name)) patchedAt.set(name, performance.now());
      busy.add(name);
      complete(d)
        .catch((err: unknown) => {
          if (!stopped) print(`simulated rollout of ${name} failed: ${String(err)}`);
        })
        .finally(() => busy.delete(name));
    },
  });
  reflector.start();
  return {
    reflector,
    stop: () => {
      stopped = true;
      return reflector.stop();
    },
  };
}

/** The webhook's /metrics (on its HTTPS port). */
function metricsText(server: ServerProcess, tls: ServingTls): Promise<string> {
  return new Promise((resolve, reject) => {
    request(server.url.replace(/\/mutate$/, '/metrics'), { ca: tls.caPem }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
    })
      .on('error', reject)
      .end();
  });
}

/** Runs the benchmark; prints as it goes and returns the figures. */
export async function runTrustRestart(say: (line: string) => void = print): Promise<TrustRestartFigures> {
  const owners = envNumber('BENCH_RESTART_OWNERS', 500);
  const pods = envNumber('BENCH_RESTART_PODS', 10_000);
  const concurrency = envNumber('BENCH_RESTART_CONCURRENCY', 2);
  say('== trust-bundle restarter (issue 15) ==');
  const scripts = buildChildren(say);
  const scratch = await scratchDir('rtb-bench-restart-');
  let plane: ControlPlane | undefined;
  let client: KeepAliveClient | undefined;
  let simulator: ReturnType<typeof simulateRollouts> | undefined;
  const servers: ServerProcess[] = [];
  try {
    plane = await ControlPlane.start({ clusters: ['rt'] });
    const { cluster, kc, tls } = await prepareWebhookCluster(plane, 'rt', scratch.dir, say);
    client = await KeepAliveClient.create(kc, 16);
    const [old, next, floorBundle] = [await newBundleText(), await newBundleText(), await newBundleText()];
    await putBundle(kc, old.pem);
    let t = performance.now();
    await createObjects(client, owners, pods, old.hash, next.hash);
    say(
      `created ${owners} Deployments (ReplicaSet, stale Pod each) and ${pods - owners} filler Pods in ${Math.round(performance.now() - t)} ms`,
    );

    const synced = async (server: ServerProcess): Promise<number> => {
      await sleep(3_000);
      return memoryKib(server.pid).rss;
    };
    const baseline = await startWebhookProcess(
      scripts,
      cluster,
      tls,
      scratch.dir,
      [],
      ['--no-trust-restart'],
      'webhook-baseline',
    );
    servers.push(baseline);
    const baselineRssKib = await synced(baseline);
    await baseline.proc.stop();
    servers.pop();
    const hook = await startWebhookProcess(
      scripts,
      cluster,
      tls,
      scratch.dir,
      [],
      [`--restart-concurrency=${concurrency}`, '--restart-delay=0s', '--restart-deadline=5m'],
      'webhook-restarter',
    );
    servers.push(hook);
    for (let i = 0; i < 300 && metricValue(await metricsText(hook, tls), 'rtb_trust_restart_active') < 1; i++)
      await sleep(100);
    const restarterRssKib = await synced(hook);

    const patchedAt = new Map<string, number>();
    simulator = simulateRollouts(cluster, client, patchedAt);
    await simulator.reflector.waitForSync();
    t = performance.now();
    await putBundle(kc, next.pem);
    while (patchedAt.size < owners) await sleep(100);
    const restarterMs = Math.max(...patchedAt.values()) - t;
    const text = await metricsText(hook, tls);
    const calls = ['replicaSetOwner', 'readWorkload', 'annotateTemplate', 'evict', 'labelPod'];
    const requestsPerOwner = Object.fromEntries(
      calls.map((call) => [
        call,
        metricValue(text, 'rtb_trust_restart_api_requests_total', { call }) / owners,
      ]),
    );
    say(
      `restarter: ${owners} owners patched in ${Math.round(restarterMs)} ms; peak RSS ${mb(memoryKib(hook.pid).peak)}`,
    );
    await hook.proc.stop();
    servers.pop();

    // The floor: the same rollouts, `concurrency` at a time, patched by the benchmark.
    patchedAt.clear();
    const names = [...Array(owners).keys()].map((i) => `d-${i}`);
    t = performance.now();
    await forEachLimited(names, concurrency, async (name) => {
      await client?.request(
        'PATCH',
        `${DEPLOYMENTS}/${name}?fieldManager=rtb-bench&force=true`,
        {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name },
          spec: { template: { metadata: { annotations: { [CTB_HASH_ANNOTATION]: floorBundle.hash } } } },
        },
        'application/apply-patch+yaml',
      );
      for (;;) {
        const d = simulator?.reflector.store.get(`${NS}/${name}`);
        const done =
          d?.spec?.template?.metadata?.annotations?.[CTB_HASH_ANNOTATION] === floorBundle.hash &&
          (d.status?.observedGeneration ?? 0) >= (d.metadata?.generation ?? 0);
        if (done) break;
        await sleep(5);
      }
    });
    const floorMs = performance.now() - t;
    const figures: TrustRestartFigures = {
      owners,
      pods,
      concurrency,
      restarterMs,
      floorMs,
      restarterRssKib,
      baselineRssKib,
      requestsPerOwner,
    };
    say('-- trust-bundle restarter: result --');
    for (const line of trustRestartSummary(figures)) say(line);
    return figures;
  } finally {
    await simulator?.stop();
    client?.close();
    for (const s of servers.reverse()) await s.proc.stop();
    await plane?.stop();
    await scratch.remove();
  }
}

/** The result lines. */
export function trustRestartSummary(f: TrustRestartFigures): string[] {
  const total = Object.values(f.requestsPerOwner).reduce((a, b) => a + b, 0);
  const by = Object.entries(f.requestsPerOwner)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(', ');
  return [
    `trust restart: ${f.owners} stale owners, ${f.concurrency} at a time, rollouts completed at once: all patched in ${(f.restarterMs / 1000).toFixed(1)} s (${(f.restarterMs / f.owners).toFixed(0)} ms per owner); floor (the benchmark patching and waiting itself) ${(f.floorMs / 1000).toFixed(1)} s`,
    `trust restart: webhook RSS with ${f.pods} Pods (${Math.ceil((f.pods - f.owners) / 2) + f.owners} ours): restarter active ${mb(f.restarterRssKib)}, baseline --no-trust-restart ${mb(f.baselineRssKib)}`,
    `trust restart: API requests per owner ${total.toFixed(2)} (${by}), besides the Pod list+watch`,
  ];
}

if (isMain(import.meta.url)) {
  runTrustRestart().catch((error: unknown) => {
    process.stderr.write(
      `trust-restart: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
