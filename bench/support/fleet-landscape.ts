// A KCP and N runtimes served by a pool of P real kube-apiservers (runtime i on pool server
// i mod P), for bench/fleet-scale.ts. Every runtime has a kubeconfig Secret of its own with a
// client identity of its own (an ECDSA certificate of its pool server's CA, in system:masters)
// and a RuntimeBootstrapper; the controller runs in direct mode in its own process with the drift
// listener. No kubelet runs: the webhook Deployment of each pool server is reported available
// by the simulated kubelet while anything is Installing.
import { freePort } from '../../src/envtest/free-port.js';
import { resolveBinaries } from '../../src/envtest/binaries.js';
import { ControlPlane, type LocalCluster } from '../../src/envtest/control-plane.js';
import { renderKubeconfig } from '../../src/envtest/kubeconfig.js';
import { newRuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { runtimeBootstrapperCrd } from '../../src/api/runtime-bootstrapper-crd.js';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT } from '../../src/api/runtime-names.js';
import { applyObjects } from '../../src/kube/apply.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { KeepAliveAccess } from '../../src/kube/keep-alive-access.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { markDeploymentAvailable } from '../../src/local/simulated-kubelet.js';
import { CTB_NAME, KCP_PULL_SECRET, kubeconfigSecret, putSources } from '../../test/support/kcp.js';
import type { ControllerChildConfig } from './controller-child.js';
import type { GroupCpuWindow } from './cpu-groups.js';
import type { StatusTracker } from './status-tracker.js';
import { domainOf, RB_PATH, startControllerChild, type ControllerProcess } from './kcp-bench.js';
import { forEachLimited } from './limited.js';
import { startDelayProxies, type DelayProxies } from './delay-proxies.js';
import type { ChildScripts } from './processes.js';

/** Options of {@link startFleet}. */
export interface FleetOptions {
  readonly runtimes: number;
  /** Real kube-apiservers the runtimes share. */
  readonly pool: number;
  readonly scripts: ChildScripts;
  readonly dir: string;
  readonly say: (line: string) => void;
  /** The controller's fan-out concurrency (undefined: its default). */
  readonly concurrency?: number;
  /**
   * A round trip (ms) between the controller and every runtime's API server: the kubeconfigs
   * name a delaying proxy (./delay-proxy.ts, in a process of their own) in front of each pool
   * server; 0 or undefined: none.
   */
  readonly rttMs?: number;
}

/** A running fleet. */
export interface Fleet {
  readonly plane: ControlPlane;
  readonly kcp: LocalCluster;
  /** Keep-alive access to the KCP for the benchmark's own requests. */
  readonly kcpAccess: KeepAliveAccess;
  readonly pool: readonly LocalCluster[];
  /** Runtime IDs, `rt-00001` … */
  readonly ids: readonly string[];
  /** The kubeconfig text of each runtime. */
  readonly kubeconfigs: ReadonlyMap<string, string>;
  readonly controllerConfig: ControllerChildConfig;
  /** The round trip the runtimes' proxies add (0: none). */
  readonly rttMs: number;
  /** The delaying proxies in front of the pool servers (none without a round trip). */
  readonly proxies: DelayProxies | undefined;
  /** PIDs of the pool's API servers, the KCP's, and etcd. */
  readonly poolPids: readonly number[];
  readonly kcpPid: number;
  readonly etcdPid: number;
  readonly startSeconds: number;
  /** Marks the webhook Deployment available on every pool server. */
  markAvailable(): Promise<void>;
  /** Creates every RuntimeBootstrapper (16 at a time). */
  createBootstrappers(): Promise<void>;
  /** Starts a controller child (log file `name`), `more` overriding the fleet's settings. */
  startController(name: string, more?: Partial<ControllerChildConfig>): Promise<ControllerProcess>;
  stop(): Promise<void>;
}

/** What a mode of the fleet benchmark that runs after onboarding is given (replicas, waves). */
export interface FleetModeContext {
  readonly fleet: Fleet;
  readonly tracker: StatusTracker;
  /** Writes a new pull Secret labelled `label`. */
  readonly writeSource: (label: string) => Promise<void>;
  /** A CPU window over these controller PIDs (and the fleet's servers). */
  readonly cpuWindow: (controllerPids: readonly number[]) => GroupCpuWindow;
  readonly say: (line: string) => void;
}

/** The runtime IDs of a fleet of `n`. */
export const fleetIds = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `rt-${String(i + 1).padStart(5, '0')}`);

/** Starts the pool and the KCP, and writes every runtime's kubeconfig Secret. */
export async function startFleet(o: FleetOptions): Promise<Fleet> {
  const ids = fleetIds(o.runtimes);
  const names = Array.from({ length: o.pool }, (_, i) => `pool-${String(i + 1).padStart(2, '0')}`);
  const t0 = performance.now();
  const batch = 4;
  const plane = await ControlPlane.start({
    binaries: await resolveBinaries(),
    clusters: ['kcp', ...names.slice(0, batch - 1)],
  });
  const kcpAccess = new KeepAliveAccess(plane.cluster('kcp').kubeConfig());
  let proxies: DelayProxies | undefined;
  const closeProxies = async (): Promise<void> => {
    await proxies?.stop();
  };
  try {
    for (let i = batch - 1; i < names.length; i += batch)
      await Promise.all(names.slice(i, i + batch).map((n) => plane.addCluster(n)));
    const startSeconds = (performance.now() - t0) / 1000;
    o.say(`started etcd and ${names.length + 1} kube-apiservers in ${startSeconds.toFixed(1)} s`);
    const kcp = plane.cluster('kcp');
    const pool = names.map((n) => plane.cluster(n));
    // The kubelet's stand-in on each pool server, over one kept connection each.
    const kubelets = pool.map((c) => new KeepAliveAccess(c.kubeConfig()));
    const rttMs = o.rttMs ?? 0;
    if (rttMs > 0) {
      const targets = pool.map((c) => Number(new URL(c.server).port));
      proxies = await startDelayProxies(o.scripts.delayProxyChild, o.dir, targets, rttMs);
      o.say(
        `runtimes behind ${targets.length} delaying proxies (a process of their own): ${rttMs} ms round trip`,
      );
    }
    await ensureCrds(kcp.kubeConfig(), [runtimeBootstrapperCrd()]);
    await putSources(kcp);
    const kubeconfigs = new Map<string, string>();
    const t1 = performance.now();
    await forEachLimited(ids, 16, async (id, i) => {
      const server = pool[i % pool.length];
      if (!server) throw new Error('empty pool');
      const proxyPort = proxies?.ports[i % pool.length];
      const url = new URL(server.server);
      if (proxyPort !== undefined) url.port = String(proxyPort);
      const identity = await issueCertificate(server.ca, {
        commonName: `rtb-${id}`,
        organizations: ['system:masters'],
        usage: 'client',
      });
      const text = renderKubeconfig({
        name: id,
        server: url.origin,
        caPem: server.caPem,
        clientCertPem: identity.certPem,
        clientKeyPem: identity.keyPem,
      });
      kubeconfigs.set(id, text);
      await applyObjects(kcpAccess, [kubeconfigSecret(id, text)]);
    });
    o.say(
      `${ids.length} kubeconfig Secrets (one client identity each) in ${((performance.now() - t1) / 1000).toFixed(1)} s`,
    );
    const controllerConfig: ControllerChildConfig = {
      kubeconfigPath: kcp.kubeconfigPath,
      port: await freePort(),
      namespace: 'kcp-system',
      pullSecretName: KCP_PULL_SECRET,
      clusterTrustBundleName: CTB_NAME,
      configMapName: 'rt-bootstrapper-config',
      ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
      resyncMs: 0,
      release: { image: 'example.com/rt-bootstrapper:1.0.0', version: '1.0.0' },
      drift: { listenerPort: await freePort(), rateLimit: { perSecond: 1_000, burst: 1_000 } },
      // BENCH_LOG_LEVEL=info shows, among others, why an attestation was out of sync.
      logLevel: process.env.BENCH_LOG_LEVEL ?? 'warn',
    };
    const pid = (c: LocalCluster): number => {
      if (c.pid === undefined) throw new Error(`${c.name} has no process`);
      return c.pid;
    };
    const etcdPid = plane.etcd.process.pid;
    if (etcdPid === undefined) throw new Error('etcd is not running');
    return {
      plane,
      kcp,
      kcpAccess,
      pool,
      ids,
      kubeconfigs,
      controllerConfig,
      poolPids: pool.map(pid),
      kcpPid: pid(kcp),
      etcdPid,
      rttMs,
      proxies,
      startSeconds,
      markAvailable: async () => {
        await Promise.all(
          kubelets.map((access) =>
            markDeploymentAvailable(access, RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT).catch(() => false),
          ),
        );
      },
      createBootstrappers: () =>
        forEachLimited(ids, 16, async (id) => {
          await kubeRequest(kcpAccess, {
            method: 'POST',
            path: RB_PATH,
            body: newRuntimeBootstrapper(id, 'kcp-system', { annotations: { 'skr-domain': domainOf(id) } }),
          });
        }),
      startController: (name, more) =>
        startControllerChild({ ...controllerConfig, ...more }, o.scripts, o.dir, name),
      async stop() {
        kcpAccess.close();
        for (const access of kubelets) access.close();
        await closeProxies();
        await plane.stop();
      },
    };
  } catch (error) {
    kcpAccess.close();
    await closeProxies();
    await plane.stop();
    throw error;
  }
}
