import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { ControlPlane } from '../../../src/envtest/control-plane.js';
import type { LocalRegistry } from '../../../src/envtest/local-registry.js';
import { resolveNodeBinaries } from '../../../src/envtest/node-binaries.js';
import { trackTempDir, untrackTempDir } from '../../../src/envtest/process-registry.js';
import { resolveRtbImage } from '../../../src/envtest/rtb-image.js';
import { startLandscapeRegistries } from '../../../src/local/landscape-registries.js';

/** One runtime cluster with a node, the rtb image in an open and a secured local registry. */
export interface NodeLandscape {
  readonly plane: ControlPlane;
  readonly open: LocalRegistry;
  readonly secured: LocalRegistry;
  /** The rtb image in the open registry. */
  readonly openImage: string;
  /** The rtb image in the secured registry (pulling needs `secured.dockerConfigJson()`). */
  readonly securedImage: string;
  /**
   * The seed Pod's image as the webhook rewrites it: the locally built pause image in the secured
   * registry at `kyma-project/rt-bootstrapper/pause:e2e` (upstream's e2e image name).
   */
  readonly seedImage: string;
}

/**
 * Starts the landscape for the calling test file (before its tests) and stops it after them;
 * `then` runs once it is up, in the same hook (two top-level hooks of node:test do not wait for
 * each other). `others` are clusters without a node beside it (a KCP); `apiserverArgs` are extra
 * kube-apiserver flags for every cluster (a gate the node's minor keeps off by default).
 */
export function useNodeLandscape(
  then?: (landscape: NodeLandscape) => Promise<void>,
  cluster = 'runtime',
  others: readonly string[] = [],
  apiserverArgs: readonly string[] = [],
): () => NodeLandscape {
  let landscape: NodeLandscape | undefined;
  let dir: string | undefined;
  const stops: (() => Promise<void>)[] = [];
  before(async () => {
    const image = await resolveRtbImage();
    dir = await mkdtemp(join(tmpdir(), 'rtb-e2e-'));
    trackTempDir(dir);
    const nodeBinaries = await resolveNodeBinaries();
    const registries = await startLandscapeRegistries({
      dir,
      image,
      pause: nodeBinaries.pause,
      username: 'rtb-e2e',
    });
    stops.push(() => registries.stop());
    const { open, secured, openImage, securedImage, seedImage } = registries;
    const plane = await ControlPlane.start({
      clusters: [cluster, ...others],
      nodes: [cluster],
      nodeBinaries,
      apiserverArgs,
    });
    stops.unshift(() => plane.stop());
    const node = plane.cluster(cluster).node;
    if (!node) throw new Error('the cluster has no node');
    await node.addPlainHttpRegistry(open.host);
    await node.addPlainHttpRegistry(secured.host);
    landscape = { plane, open, secured, openImage, securedImage, seedImage };
    await then?.(landscape);
  });
  after(async () => {
    for (const stop of stops) await stop();
    if (dir) {
      await rm(dir, { recursive: true, force: true });
      untrackTempDir(dir);
    }
  });
  return () => {
    if (!landscape) throw new Error('the landscape is not started (use it inside a test)');
    return landscape;
  };
}
