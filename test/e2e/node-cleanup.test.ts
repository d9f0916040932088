import { CoreV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ControlPlane } from '../../src/envtest/control-plane.js';
import { cgroupTreePids, cgroupV1Hierarchies, NODE_CPU_SHARES } from '../../src/envtest/node-cgroups.js';
import { resolveNodeBinaries } from '../../src/envtest/node-binaries.js';
import { PAUSE_IMAGE_NAME } from '../../src/envtest/node-config.js';
import { sweepOrphans } from '../../src/envtest/process-registry.js';
import { eventually } from '../../src/envtest/eventually.js';
import { startPausePod } from './support/pause-pod.js';
import { identify, stillRunning, type ProcessIdentity } from './support/process-identity.js';

/** What a node held, to check that nothing of it is left. */
interface Held {
  readonly bridge: string;
  readonly cgroupRoot: string;
  readonly processes: ProcessIdentity[];
}

const bridgeExists = (bridge: string): boolean =>
  spawnSync('ip', ['link', 'show', bridge], { stdio: 'ignore' }).status === 0;

/** This process's cgroup in the cpu hierarchy. */
const ownCpuCgroup = (): string =>
  readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find(([, controllers]) => controllers?.split(',').includes('cpu'))?.[2] ?? '/';

/** cpu.shares of each cgroup from below this process's own down to `root`, in the cpu hierarchy. */
function cpuSharesBelowOwn(root: string): number[] {
  const hierarchy = cgroupV1Hierarchies().find((h) => h.endsWith('/cpu'));
  assert.ok(hierarchy, 'a cpu hierarchy');
  const own = ownCpuCgroup().split('/').filter(Boolean);
  const parts = root.split('/').filter(Boolean);
  return parts
    .slice(own.length)
    .map((_, i) =>
      Number(readFileSync(join(hierarchy, ...parts.slice(0, own.length + i + 1), 'cpu.shares'), 'utf8')),
    );
}

const cgroupExists = (root: string): boolean => cgroupV1Hierarchies().some((h) => existsSync(join(h, root)));

function assertNothingLeft(held: Held): void {
  assert.deepEqual(stillRunning(held.processes), [], 'containerd, shims and containers are gone');
  assert.equal(bridgeExists(held.bridge), false, `bridge ${held.bridge} is deleted`);
  assert.equal(cgroupExists(held.cgroupRoot), false, `cgroup ${held.cgroupRoot} is removed`);
}

describe('two nodes on one machine', () => {
  test('started together, each kubelet binds its device-plugin socket in a folder of its own', async () => {
    const nodeBinaries = await resolveNodeBinaries();
    const plane = await ControlPlane.start({ clusters: ['one', 'two'], nodes: ['one', 'two'], nodeBinaries });
    try {
      for (const name of ['one', 'two']) {
        const node = plane.cluster(name).node;
        assert.ok(node);
        // Mounted over the machine-wide folder in the node's mount namespace: the file is here.
        assert.ok(existsSync(join(node.paths.dir, 'device-plugins', 'kubelet.sock')), `${name}'s socket`);
        // Its Pods weigh as a node, not as one host process, on the way up to this process's cgroup.
        const shares = cpuSharesBelowOwn(node.cgroupRoot);
        assert.ok(shares.length > 0, node.cgroupRoot);
        assert.deepEqual(
          shares,
          shares.map(() => NODE_CPU_SHARES),
          node.cgroupRoot,
        );
      }
    } finally {
      await plane.stop();
    }
  });
});

describe('a node leaves nothing behind', () => {
  test('stop() kills containerd, the shims and every container, and removes cgroups and bridge', async () => {
    const nodeBinaries = await resolveNodeBinaries();
    const plane = await ControlPlane.start({ clusters: ['stopped'], nodes: ['stopped'], nodeBinaries });
    let held: Held;
    try {
      const cluster = plane.cluster('stopped');
      const node = cluster.node;
      assert.ok(node);
      await startPausePod(
        cluster.kubeConfig().makeApiClient(CoreV1Api),
        `${PAUSE_IMAGE_NAME}:${nodeBinaries.pause.tag}`,
      );
      // containerd, a shim, the sandbox's pause and the container's pause at least.
      held = {
        bridge: node.network.bridge,
        cgroupRoot: node.cgroupRoot,
        processes: identify(cgroupTreePids(node.cgroupRoot)),
      };
      const names = held.processes.map((p) => `${p.pid} ${p.comm}`).join(', ');
      assert.ok(held.processes.length >= 4, `processes in the node's cgroup: ${names}`);
      assert.ok(bridgeExists(held.bridge));
    } finally {
      await plane.stop();
    }
    assertNothingLeft(held);
  });

  test('a node whose owner was killed with SIGKILL is cleaned up by the next sweep', async () => {
    const script = fileURLToPath(new URL('./support/node-owner.ts', import.meta.url));
    const owner = spawn(process.execPath, ['--import', 'tsx', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: owner.stdout });
      lines.once('line', resolve);
      owner.once('exit', (code) => {
        reject(new Error(`the owner exited (${code ?? 'signal'}) before reporting`));
      });
    });
    const reported = JSON.parse(line) as Omit<Held, 'processes'> & { pids: number[]; dir: string };
    const held: Held = { ...reported, processes: identify(reported.pids) };
    assert.ok(held.processes.length >= 4);
    owner.kill('SIGKILL');
    await new Promise((r) => owner.once('exit', r));
    // SIGKILL leaves no chance to clean up: everything still runs until somebody sweeps.
    assert.ok(stillRunning(held.processes).length > 0);
    assert.ok(bridgeExists(held.bridge));
    sweepOrphans();
    await eventually(
      () => (stillRunning(held.processes).length === 0 ? true : undefined),
      10_000,
      'the PIDs to end',
    );
    assertNothingLeft(held);
    // The owner's working folder is the one thing only its own exit hook deletes.
    rmSync(reported.dir, { recursive: true, force: true });
  });
});
