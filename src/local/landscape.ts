import type { KubernetesObject } from '@kubernetes/client-node';
import { loadavg } from 'node:os';
import type { Logger } from 'pino';
import { ControlPlane, type LocalCluster } from '../envtest/control-plane.js';
import { resolveNodeBinaries } from '../envtest/node-binaries.js';
import { nodeHostProblem } from '../envtest/node-host.js';
import { resolveRtbImage } from '../envtest/rtb-image.js';
import { applyObjects } from '../kube/apply.js';
import { ControlPlaneError } from '../envtest/errors.js';
import {
  createRuntimeBootstrappers,
  heldSetVersion,
  startKcpLandscape,
  waitReady,
  type KcpLandscape,
} from './kcp-landscape.js';
import { landscapeSourceObjects, trustBundleApiVersionOf } from './landscape-sources.js';
import { eventually } from '../envtest/eventually.js';
import { SEED_RUNNING_STEP, startNodeHosting } from './node-hosting.js';
import { PhaseClock, phaseLines } from './phase-timings.js';
import { createSeedPod, firstImage, waitWebhookServes } from './seed-pod.js';
import { readWebhookPodTimes } from './webhook-pod-times.js';
import { inProcessHosting, type WebhookHosting } from './webhook-hosting.js';

/** Where the runtimes' webhooks run: `node` (Pods, as in production), `process` (here), `auto`. */
export type WebhookPlacement = 'auto' | 'node' | 'process';

/** Options of the local landscape. */
export interface LandscapeOptions {
  readonly say: (line: string) => void;
  readonly logger: Logger;
  /** Runtime cluster names (default `runtime-1,runtime-2`). */
  readonly runtimes?: readonly string[];
  /** Default `auto`: on a node when this host can run one (root and its packages). */
  readonly webhooks?: WebhookPlacement;
}

/** A running local landscape. */
export interface Landscape {
  readonly plane: ControlPlane;
  /** Whether the runtimes' webhooks run as Pods on nodes. */
  readonly onNode: boolean;
  stop(): Promise<void>;
}

/**
 * The local landscape on the embedded default: a KCP and runtimes (real API servers), the
 * controller in direct mode with a RuntimeBootstrapper per runtime, and the webhook serving each
 * runtime (as Pods from the rtb image on a node per runtime where this host can run one, else in
 * this process); then it shows the seed example mutated (and on a node, running) on every
 * runtime, rotates the KCP's sources and shows the change arrive everywhere and take effect.
 */
export async function startLandscape(o: LandscapeOptions): Promise<Landscape> {
  const { say } = o;
  const names = o.runtimes ?? ['runtime-1', 'runtime-2'];
  const log = (l: string): void => {
    say(`· ${l}`);
  };
  const clock = new PhaseClock();
  const loadAtStart = loadAverage();
  const onNode = await choosePlacement(o.webhooks ?? 'auto', say);
  // Built (or found in the cache) before any cluster starts: a cold build takes minutes.
  const nodeBinaries = onNode ? await resolveNodeBinaries({ log }) : undefined;
  const image = onNode ? await resolveRtbImage({ log }) : undefined;
  clock.mark(onNode ? 'node binaries and the rtb image (cache or build)' : 'start');
  const plane = await ControlPlane.start({
    clusters: ['kcp', ...names],
    nodes: nodeBinaries ? names : undefined,
    nodeBinaries,
    log,
  });
  clock.mark(onNode ? 'etcd, API servers, nodes Ready' : 'etcd, API servers');
  const slowestNodeMs = Math.max(0, ...plane.clusters.map((c) => c.node?.startMs ?? 0));
  if (slowestNodeMs > 0)
    clock.detail(
      'the slowest node: containerd, kubelet, Node Ready',
      clock.now() - slowestNodeMs,
      clock.now(),
    );
  const stops: (() => Promise<void>)[] = [() => plane.stop()];
  const stop = async (): Promise<void> => {
    for (const s of stops.splice(0)) await s();
  };
  try {
    const b = plane.binaries;
    say(`kube-apiserver ${b.kubernetesVersion}, etcd ${b.etcdVersion} (${b.source})`);
    for (const c of plane.clusters)
      say(`cluster ${c.name.padEnd(10)} ${c.server}  kubeconfig: ${c.kubeconfigPath}`);
    const runtimes = names.map((n) => plane.cluster(n));
    // The KCP's CRs go in while the registries start (see createRuntimeBootstrappers).
    const [started, created] = await Promise.allSettled([
      nodeBinaries && image
        ? startNodeHosting({ plane, runtimes, image, pause: nodeBinaries.pause })
        : Promise.resolve(inProcessHosting(o.logger)),
      createRuntimeBootstrappers(plane.cluster('kcp'), names),
    ]);
    if (started.status === 'rejected') throw started.reason;
    const hosting: WebhookHosting = started.value;
    stops.unshift(() => hosting.stop());
    if (created.status === 'rejected') throw created.reason;
    clock.mark(
      hosting.onNode
        ? 'local registries, the rtb image pushed; the CRs created'
        : 'webhook hosting; the CRs created',
    );
    if (hosting.releaseImage)
      say(`webhook image ${hosting.releaseImage} (pushed to the landscape's open registry)`);
    const kcp = await startKcpLandscape({
      kcp: plane.cluster('kcp'),
      runtimes,
      configText: hosting.sources.configText,
      dockerConfigJson: hosting.sources.dockerConfigJson,
      releaseImage: hosting.releaseImage,
      registryServers: hosting.registryServers,
      simulateKubelet: !hosting.onNode,
      logger: o.logger,
    });
    stops.unshift(() => kcp.stop());
    const controllerStarted = clock.mark('controller (direct mode) started');
    say(`\ncontroller (direct mode) on kcp: one RuntimeBootstrapper per runtime`);
    await hosting.serve(runtimes);
    // On a node: the image is pulled and both replicas must pass their probes.
    await waitReady(kcp, names, hosting.onNode ? 300_000 : 60_000);
    const crsReady = clock.mark('webhook installed and available, CRs Ready');
    if (hosting.onNode) await podDetails(clock, runtimes, controllerStarted, crsReady);
    await sayBootstrappers(kcp, names, say);

    const target = firstRegistry(hosting.sources.configText);
    for (const [i, rt] of runtimes.entries()) {
      const first = i === 0;
      await waitWebhookServes(rt, (p) => firstImage(p).startsWith(`${target}/`), `rewrite to ${target}`);
      if (first) clock.mark(`the webhook answers on ${rt.name} (a dry-run create mutated)`);
      const pod = await createSeedPod(rt, 'pause-test1', say, first);
      if (first) clock.mark('seed Pod created');
      await hosting.showRunning(rt, pod, say, first ? clock : undefined);
      // When it ran, not when the look from inside it ended.
      const runningMs = clock.phases.find((p) => p.name === SEED_RUNNING_STEP)?.endMs;
      if (first && runningMs !== undefined)
        say(`  first mutated Pod running ${(runningMs / 1000).toFixed(1)} s after this process started`);
    }
    await showRotation(plane, kcp, runtimes, hosting, say);
    const until = hosting.onNode ? 'the first mutated Pod ran' : 'the first mutated Pod was stored';
    say(
      `\nwhere the time went until ${until} (load average ${loadAtStart} at the start, ${loadAverage()} now):`,
    );
    for (const line of phaseLines(clock.phases)) say(`  ${line}`);
    say(
      `\nready after ${process.uptime().toFixed(1)} s. Try: ${b.kubectl ?? 'kubectl'} --kubeconfig ${plane.cluster('kcp').kubeconfigPath} get runtimebootstrappers -n kcp-system`,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { plane, onNode, stop };
}

/** The 1-minute load average: the machine may be shared, and the timings move with it. */
const loadAverage = (): string => (loadavg()[0] ?? 0).toFixed(2);

/**
 * The webhook Pods' part of the wait for Ready, from their status (the slowest Pod of all
 * runtimes, to the second): created by the controller's install, image pulled and container
 * started, then Ready once a readiness probe passes; the rest is the controller seeing the
 * rollout and registering the webhook.
 */
async function podDetails(
  clock: PhaseClock,
  runtimes: readonly LocalCluster[],
  controllerStarted: number,
  crsReady: number,
): Promise<void> {
  const t = await readWebhookPodTimes(runtimes).catch(() => undefined);
  if (!t) return;
  // Epoch ms to ms after this process started, the clock's scale.
  const origin = Date.now() - clock.now();
  const at = (epochMs: number | undefined): number | undefined =>
    epochMs === undefined ? undefined : epochMs - origin;
  clock.detail('webhook Pods created (the install)', controllerStarted, at(t.createdAt));
  clock.detail('their image pulled, container started', at(t.createdAt), at(t.startedAt));
  clock.detail('webhook serving, readiness probe passed', at(t.startedAt), at(t.readyAt));
  clock.detail('rollout seen, webhook registered, CRs Ready', at(t.readyAt), crsReady);
}

/** Decides where the webhooks run and says why; `node` on a host that cannot run one is an error. */
async function choosePlacement(placement: WebhookPlacement, say: (l: string) => void): Promise<boolean> {
  if (placement === 'process') {
    say('webhooks: in this process (--webhooks process)');
    return false;
  }
  const problem = await nodeHostProblem();
  if (problem === undefined) {
    say('webhooks: Pods from the rtb image on a node per runtime (kubelet, containerd, runc)');
    return true;
  }
  if (placement === 'node') throw new ControlPlaneError(`--webhooks node: ${problem}`);
  say(`webhooks: in this process, as ${problem}`);
  return false;
}

async function sayBootstrappers(
  kcp: KcpLandscape,
  names: readonly string[],
  say: (l: string) => void,
): Promise<void> {
  for (const id of names) {
    const rb = await kcp.readBootstrapper(id);
    say(
      `  RuntimeBootstrapper ${id}: ${rb.status?.state ?? ''}, config version ${rb.status?.appliedVersion ?? ''}, webhook ${rb.status?.webhookVersion ?? ''}`,
    );
  }
}

/** How long the rotation's steps may take before the demonstration gives up, saying which. */
const ROTATION_LIMIT_MS = 120_000;

/** Rotates the KCP's sources, says when the new set reached each runtime, and shows it applied. */
async function showRotation(
  plane: ControlPlane,
  kcp: KcpLandscape,
  runtimes: readonly LocalCluster[],
  hosting: WebhookHosting,
  say: (l: string) => void,
): Promise<void> {
  const { rotated } = hosting;
  say(
    `\nrotating the KCP sources: a new registry mirror (${rotated.mirror}) in the ConfigMap and new pull credentials…`,
  );
  const before = kcp.sources.snapshot().versions;
  const objects = await landscapeSourceObjects({
    configText: rotated.configText,
    namespace: 'kcp-system',
    trustBundleApiVersion: await trustBundleApiVersionOf(plane.cluster('kcp').kubeConfig()),
    pullSecretName: 'registry-credentials',
    dockerConfigJson: rotated.dockerConfigJson,
  });
  await applyObjects(
    plane.cluster('kcp').kubeConfig(),
    objects.filter((x: KubernetesObject) => x.kind !== 'ClusterTrustBundle'),
  );
  const t0 = Date.now();
  // Both written sources seen: the watches may deliver one before the other, and the set version
  // of one alone is never applied anywhere when the controller coalesces the two.
  const version = await eventually(
    () => {
      const now = kcp.sources.snapshot();
      return now.versions.configMap !== before.configMap && now.versions.pullSecret !== before.pullSecret
        ? now.version
        : undefined;
    },
    ROTATION_LIMIT_MS,
    'the controller to see the new ConfigMap and pull Secret',
    20,
  );
  for (const rt of runtimes) {
    await eventually(
      async () => ((await heldSetVersion(rt)) === version ? true : undefined),
      ROTATION_LIMIT_MS,
      `set ${version} on ${rt.name}`,
      20,
    );
    say(`  ${rt.name}: set ${version} applied ${Date.now() - t0} ms after the change`);
  }
  for (const rt of runtimes) {
    // The webhook on the runtime picks the new ConfigMap up through its watch.
    await waitWebhookServes(
      rt,
      (p) => firstImage(p).startsWith(`${rotated.mirror}/`),
      `use ${rotated.mirror}`,
    );
    const pod = await createSeedPod(rt, 'pause-test2', say, false);
    await hosting.showRunning(rt, pod, say);
  }
}

/** The registry the embedded default's override sends `replace.me` to. */
function firstRegistry(configText: string): string {
  const config = JSON.parse(configText) as { overrides?: Record<string, string> };
  return config.overrides?.['replace.me'] ?? 'replace.me';
}
