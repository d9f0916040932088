// Figures of the local control plane: warm start time of one cluster (binaries cached), and the
// resident memory of an idle kube-apiserver and of etcd. Prints figures; asserts nothing.
import { readFileSync } from 'node:fs';
import { ControlPlane } from '../src/envtest/control-plane.js';
import { resolveBinaries } from '../src/envtest/binaries.js';

function rssMiB(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number((line ?? '0').replace(/\D+/g, '')) / 1024;
}

const median = (xs: number[]): number =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

const binaries = await resolveBinaries();
const runs = Number(process.env.RUNS ?? 5);
const startMs: number[] = [];
let kasRss = 0;
let etcdRss = 0;
for (let i = 0; i < runs; i++) {
  const t = performance.now();
  const plane = await ControlPlane.start({ binaries, clusters: 1 });
  startMs.push(performance.now() - t);
  if (i === runs - 1) {
    // Idle for a while so start-up garbage is collected and caches settle.
    await new Promise((r) => setTimeout(r, 15_000));
    kasRss = rssMiB(plane.clusters[0]?.pid);
    etcdRss = rssMiB(plane.etcd.process.pid);
  }
  await plane.stop();
}
console.log(`control plane: kube-apiserver ${binaries.kubernetesVersion}, etcd ${binaries.etcdVersion}`);
console.log(
  `warm start of etcd + one kube-apiserver until /readyz: median ${median(startMs).toFixed(0)} ms over ${runs} (min ${Math.min(...startMs).toFixed(0)}, max ${Math.max(...startMs).toFixed(0)})`,
);
console.log(
  `resident memory after 15 s idle: kube-apiserver ${kasRss.toFixed(0)} MiB, etcd ${etcdRss.toFixed(0)} MiB`,
);
