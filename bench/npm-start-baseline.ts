// The baseline of `npm start` on nodes: what no webhook avoids, in the conditions `rtb local` runs
// in (the same three API servers and two nodes, the landscape's registries), then one plain Pod
// (the pause image from the open registry) Running, then the rtb image as two plain Pods per node
// (what the webhook Deployment's Pods pull and start) Running. Times from this process's start, as
// `rtb local` prints its own; run it right before or after `npm start -- --once` to compare.
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { ControlPlane } from '../src/envtest/control-plane.js';
import { resolveNodeBinaries } from '../src/envtest/node-binaries.js';
import { resolveRtbImage } from '../src/envtest/rtb-image.js';
import { startLandscapeRegistries } from '../src/local/landscape-registries.js';
import { waitPodRunning } from '../src/local/seed-pod.js';

const load = (): string => (loadavg()[0] ?? 0).toFixed(2);
const mark = (step: string): void => {
  console.log(`${process.uptime().toFixed(1).padStart(6)} s  ${step}`);
};
const plainPod = (name: string, image: string, command?: string[]): V1Pod => ({
  metadata: { name },
  spec: { containers: [{ name: 'main', image, command }] },
});

const loadAtStart = load();
const nodeBinaries = await resolveNodeBinaries({});
const image = await resolveRtbImage({});
mark('node binaries and the rtb image (cache)');
const names = ['runtime-1', 'runtime-2'];
const plane = await ControlPlane.start({ clusters: ['kcp', ...names], nodes: names, nodeBinaries });
mark('etcd, API servers, nodes Ready');
try {
  const registries = await startLandscapeRegistries({
    dir: join(plane.dir, 'registries'),
    image,
    pause: nodeBinaries.pause,
  });
  try {
    const runtimes = names.map((n) => plane.cluster(n));
    for (const rt of runtimes) await rt.node?.addPlainHttpRegistry(registries.open.host);
    mark('local registries, the images pushed');
    const core = (i: number): CoreV1Api =>
      plane
        .cluster(names[i] ?? '')
        .kubeConfig()
        .makeApiClient(CoreV1Api);
    await core(0).createNamespacedPod({
      namespace: 'default',
      body: plainPod('plain', registries.openSeedImage),
    });
    await waitPodRunning(plane.cluster('runtime-1'), 'plain');
    mark('a plain Pod (the pause image, open registry) Running');
    const idle = ['/usr/bin/node', '-e', 'setInterval(() => {}, 1e9)'];
    const pods = names.flatMap((_, i) => ['rtb-1', 'rtb-2'].map((name) => ({ i, name })));
    for (const p of pods)
      await core(p.i).createNamespacedPod({
        namespace: 'default',
        body: plainPod(p.name, registries.openImage, idle),
      });
    for (const p of pods) await waitPodRunning(plane.cluster(names[p.i] ?? ''), p.name);
    mark('the rtb image as two plain Pods per node, all Running');
  } finally {
    await registries.stop();
  }
} finally {
  console.log(`load average ${loadAtStart} at the start, ${load()} at the end`);
  await plane.stop();
}
