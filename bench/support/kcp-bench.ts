// A KCP and N runtimes on real API servers, with the controller in direct mode in its own
// process: what the propagation and drift-repair benchmarks share. Set up like the integration
// tests (test/integration/direct-mode.test.ts, drift-channel.test.ts): the CRD, the three
// sources, one kubeconfig Secret and one RuntimeBootstrapper per runtime; no kubelet runs, so
// the webhook Deployments are reported available by the simulated kubelet.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type RuntimeBootstrapper,
  runtimeBootstrappersPath,
  newRuntimeBootstrapper,
} from '../../src/api/runtime-bootstrapper.js';
import { runtimeBootstrapperCrd } from '../../src/api/runtime-bootstrapper-crd.js';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT } from '../../src/api/runtime-names.js';
import { resolveBinaries } from '../../src/envtest/binaries.js';
import { ControlPlane, type LocalCluster } from '../../src/envtest/control-plane.js';
import { freePort } from '../../src/envtest/free-port.js';
import type { ManagedProcess } from '../../src/envtest/managed-process.js';
import { waitReady } from '../../src/envtest/wait-ready.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { markDeploymentAvailable } from '../../src/local/simulated-kubelet.js';
import {
  CTB_NAME,
  KCP_PULL_SECRET,
  kubeconfigFor,
  putKubeconfigSecret,
  putSources,
} from '../../test/support/kcp.js';
import type { ControllerChildConfig, ControllerChildState } from './controller-child.js';
import { memoryKib } from './proc.js';
import { sleep, startNode, type ChildScripts } from './processes.js';

export const RB_PATH = runtimeBootstrappersPath('kcp-system');
/** The runtime's domain in the drift bench (the listener pins the client certificate's SAN to it). */
export const domainOf = (id: string): string => `${id}.kyma.example.com`;

/** The controller child as the benchmark sees it. */
export interface ControllerProcess {
  readonly proc: ManagedProcess;
  readonly pid: number;
  readonly config: ControllerChildConfig;
  state(): Promise<ControllerChildState>;
  metrics(): Promise<string>;
  /** A full garbage collection in the controller (it runs with --expose-gc). */
  gc(): Promise<void>;
  /** Starts a new event-loop delay measurement. */
  resetEventLoop(): Promise<void>;
  /** Queues every runtime for a full re-apply (a forced pass over all). */
  resync(): Promise<void>;
  /** Runs one period of the periodic resync (attested runtimes skipped but for their share). */
  periodicResync(): Promise<{ forced: number; skipped: number }>;
  /** Starts a CPU profile; `profileStop` answers it (`.cpuprofile` JSON). */
  profileStart(): Promise<void>;
  profileStop(): Promise<string>;
}

/** A running KCP, its runtimes and the controller. */
export interface KcpBench {
  readonly plane: ControlPlane;
  readonly kcp: LocalCluster;
  readonly runtimes: readonly LocalCluster[];
  readonly controller: ControllerProcess;
  /** PIDs of the KCP's and the runtimes' API servers, and of etcd. */
  readonly apiserverPids: readonly number[];
  readonly etcdPid: number;
  /** Seconds to start the API servers, and to get every CR Ready after the controller started. */
  readonly startSeconds: number;
  readonly readySeconds: number;
  /** The controller's VmRSS (KiB) once it was ready, before any RuntimeBootstrapper existed. */
  readonly controllerRssAtStart: number;
  listBootstrappers(): Promise<RuntimeBootstrapper[]>;
  stop(): Promise<void>;
}

/** Options of {@link startKcpBench}. */
export interface KcpBenchOptions {
  readonly runtimes: number;
  readonly scripts: ChildScripts;
  readonly dir: string;
  readonly say: (line: string) => void;
  readonly concurrency?: number;
  readonly coalesceMs?: number;
  /** Serve the drift listener in the controller and give runtimes a domain. */
  readonly drift?: { readonly rateLimit?: { readonly perSecond: number; readonly burst: number } };
  /** API servers started at once (a 2-core machine starts a few at a time more reliably). */
  readonly startBatch?: number;
}

/**
 * Starts the controller child (./controller-child.ts) with `config` and waits until it is ready
 * (its caches synced). `name` names its log file in `dir`.
 */
export async function startControllerChild(
  config: ControllerChildConfig,
  scripts: ChildScripts,
  dir: string,
  name = 'controller',
): Promise<ControllerProcess> {
  const configFile = join(dir, `${name}-config.json`);
  await writeFile(configFile, JSON.stringify(config));
  // --expose-gc only enables the benchmark's /gc (to tell live memory from garbage).
  // BENCH_CONTROLLER_NODE_OPTIONS: more node options for the controller (e.g. the collector's sizes).
  const more = (process.env.BENCH_CONTROLLER_NODE_OPTIONS ?? '').split(' ').filter((o) => o !== '');
  const proc = startNode(name, scripts.controllerChild, [configFile], dir, ['--expose-gc', ...more]);
  try {
    await waitReady(proc, `http://127.0.0.1:${config.port}/readyz`, undefined, 300_000);
  } catch (error) {
    await proc.stop();
    throw error;
  }
  if (proc.pid === undefined) throw new Error('the controller child is not running');
  const base = `http://127.0.0.1:${config.port}`;
  return {
    proc,
    pid: proc.pid,
    config,
    state: async () => (await (await fetch(`${base}/state`)).json()) as ControllerChildState,
    metrics: async () => (await fetch(`${base}/metrics`)).text(),
    gc: async () => {
      await fetch(`${base}/gc`);
    },
    resetEventLoop: async () => {
      await fetch(`${base}/reset-event-loop`);
    },
    resync: async () => {
      await fetch(`${base}/resync`);
    },
    periodicResync: async () =>
      (await (await fetch(`${base}/periodic-resync`)).json()) as { forced: number; skipped: number },
    profileStart: async () => {
      await fetch(`${base}/profile/start`);
    },
    profileStop: async () => (await fetch(`${base}/profile/stop`)).text(),
  };
}

/** Starts everything; stops what it started when anything fails. */
export async function startKcpBench(o: KcpBenchOptions): Promise<KcpBench> {
  const ids = Array.from({ length: o.runtimes }, (_, i) => `rt-${String(i + 1).padStart(2, '0')}`);
  const binaries = await resolveBinaries();
  const t0 = performance.now();
  const batch = o.startBatch ?? 5;
  const plane = await ControlPlane.start({ binaries, clusters: ['kcp', ...ids.slice(0, batch - 1)] });
  let controller: ControllerProcess | undefined;
  try {
    for (let i = batch - 1; i < ids.length; i += batch) {
      await Promise.all(ids.slice(i, i + batch).map((id) => plane.addCluster(id)));
    }
    const startSeconds = (performance.now() - t0) / 1000;
    o.say(`started etcd and ${ids.length + 1} kube-apiservers in ${startSeconds.toFixed(1)} s`);
    const kcp = plane.cluster('kcp');
    const runtimes = ids.map((id) => plane.cluster(id));
    const kc = kcp.kubeConfig();
    await ensureCrds(kc, [runtimeBootstrapperCrd()]);
    await putSources(kcp);
    for (const rt of runtimes) {
      await putKubeconfigSecret(kcp, rt.name, await kubeconfigFor(rt, 'rtb-controller', ['system:masters']));
    }

    const port = await freePort();
    const config: ControllerChildConfig = {
      kubeconfigPath: kcp.kubeconfigPath,
      port,
      namespace: 'kcp-system',
      pullSecretName: KCP_PULL_SECRET,
      clusterTrustBundleName: CTB_NAME,
      configMapName: 'rt-bootstrapper-config',
      ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
      ...(o.coalesceMs !== undefined ? { coalesceMs: o.coalesceMs } : {}),
      resyncMs: 0,
      release: { image: 'example.com/rt-bootstrapper:1.0.0', version: '1.0.0' },
      ...(o.drift
        ? {
            drift: {
              listenerPort: await freePort(),
              ...(o.drift.rateLimit ? { rateLimit: o.drift.rateLimit } : {}),
            },
          }
        : {}),
      logLevel: 'info',
    };
    controller = await startControllerChild(config, o.scripts, o.dir);
    const { proc } = controller;

    await sleep(1_000);
    const controllerRssAtStart = memoryKib(controller.pid).rss;
    const listBootstrappers = async (): Promise<RuntimeBootstrapper[]> =>
      (await kubeRequest<{ items: RuntimeBootstrapper[] }>(kc, { method: 'GET', path: RB_PATH })).items;
    const t1 = performance.now();
    for (const id of ids) {
      await kubeRequest(kc, {
        method: 'POST',
        path: RB_PATH,
        body: newRuntimeBootstrapper(
          id,
          'kcp-system',
          o.drift ? { annotations: { 'skr-domain': domainOf(id) } } : {},
        ),
      });
    }
    // The simulated kubelet, only while something is Installing.
    for (;;) {
      const rbs = await listBootstrappers();
      const states = rbs.map((rb) => rb.status?.state ?? 'Pending');
      if (rbs.length === ids.length && states.every((s) => s === 'Ready')) break;
      if (performance.now() - t1 > 180_000) {
        const counts = new Map<string, number>();
        for (const s of states) counts.set(s, (counts.get(s) ?? 0) + 1);
        throw new Error(
          `not every RuntimeBootstrapper became Ready within 180 s: ${[...counts].map(([s, n]) => `${s} ${n}`).join(', ')}\n${proc.logTail(10)}`,
        );
      }
      await Promise.all(
        rbs
          .filter((rb) => rb.status?.state === 'Installing')
          .map((rb) =>
            markDeploymentAvailable(
              plane.cluster(rb.spec.runtimeID).kubeConfig(),
              RUNTIME_NAMESPACE,
              WEBHOOK_DEPLOYMENT,
            ).catch(() => false),
          ),
      );
      await sleep(250);
    }
    const readySeconds = (performance.now() - t1) / 1000;
    o.say(`every RuntimeBootstrapper Ready ${readySeconds.toFixed(1)} s after they were created`);
    const apiserverPids = plane.clusters.map((c) => c.pid).filter((p): p is number => p !== undefined);
    const etcdPid = plane.etcd.process.pid;
    if (etcdPid === undefined) throw new Error('etcd is not running');
    const ctl = controller;
    return {
      plane,
      kcp,
      runtimes,
      controller: ctl,
      apiserverPids,
      etcdPid,
      startSeconds,
      readySeconds,
      controllerRssAtStart,
      listBootstrappers,
      async stop() {
        await ctl.proc.stop();
        await plane.stop();
      },
    };
  } catch (error) {
    await controller?.proc.stop();
    await plane.stop();
    throw error;
  }
}
