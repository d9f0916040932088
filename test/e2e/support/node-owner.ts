// A process that owns a cluster with a node and one running Pod, for the cleanup tests: it
// prints what it holds as one JSON line on stdout, then waits to be killed.
import { CoreV1Api } from '@kubernetes/client-node';
import { ControlPlane } from '../../../src/envtest/control-plane.js';
import { cgroupTreePids } from '../../../src/envtest/node-cgroups.js';
import { resolveNodeBinaries } from '../../../src/envtest/node-binaries.js';
import { PAUSE_IMAGE_NAME } from '../../../src/envtest/node-config.js';
import { startPausePod } from './pause-pod.js';

const nodeBinaries = await resolveNodeBinaries();
const plane = await ControlPlane.start({ clusters: ['owned'], nodes: ['owned'], nodeBinaries });
const cluster = plane.cluster('owned');
const node = cluster.node;
if (!node) throw new Error('no node');
const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
await startPausePod(core, `${PAUSE_IMAGE_NAME}:${nodeBinaries.pause.tag}`);
process.stdout.write(
  JSON.stringify({
    bridge: node.network.bridge,
    cgroupRoot: node.cgroupRoot,
    pids: cgroupTreePids(node.cgroupRoot),
    dir: plane.dir,
  }) + '\n',
);
await new Promise(() => undefined);
