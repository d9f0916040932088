import { join } from 'node:path';
import { ControlPlaneError } from './errors.js';
import { ensureGoBinary, hackDir, isExecutable, kubernetesCommand } from './go-binary.js';
import { CNI_BIN_DIR, CNI_PLUGINS, findTool } from './node-host.js';
import { ensurePauseImage, type PauseImage } from './pause-image.js';

/** What a node runs: Kubernetes binaries built here, the runtime and CNI from Debian. */
export interface NodeBinaries {
  readonly kubelet: string;
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
  readonly kubernetesVersion: string;
  readonly pause: PauseImage;
  readonly containerd: string;
  readonly ctr: string;
  readonly runc: string;
  readonly cniBinDir: string;
  readonly unshare: string;
  readonly nsenter: string;
}

/** Options for resolving the node's binaries. */
export interface ResolveNodeOptions {
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

const nodeModule = join(hackDir, 'node');
const hostTools = ['containerd', 'ctr', 'runc', 'unshare', 'nsenter', 'ip'] as const;

/**
 * The node's binaries: kubelet, kube-controller-manager and kube-scheduler from hack/node (the
 * same k8s.io/kubernetes release as kube-apiserver), built once and cached; the pause image
 * built from the module's source; containerd, runc and the CNI plugins from Debian.
 */
export async function resolveNodeBinaries(options: ResolveNodeOptions = {}): Promise<NodeBinaries> {
  const env = options.env ?? process.env;
  const tools = await findHostTools(env);
  // One after another: on two cores parallel Go builds only contend.
  const kubelet = await ensureGoBinary(kubernetesCommand('kubelet', nodeModule), env, options.log);
  const kcm = await ensureGoBinary(
    kubernetesCommand('kube-controller-manager', nodeModule),
    env,
    options.log,
  );
  const scheduler = await ensureGoBinary(kubernetesCommand('kube-scheduler', nodeModule), env, options.log);
  const pause = await ensurePauseImage(nodeModule, env, options.log);
  return {
    kubelet: kubelet.path,
    kubeControllerManager: kcm.path,
    kubeScheduler: scheduler.path,
    kubernetesVersion: kubelet.version,
    pause,
    ...tools,
    cniBinDir: CNI_BIN_DIR,
  };
}

async function findHostTools(
  env: NodeJS.ProcessEnv,
): Promise<Record<'containerd' | 'ctr' | 'runc' | 'unshare' | 'nsenter', string>> {
  const found: Partial<Record<(typeof hostTools)[number], string>> = {};
  const missing: string[] = [];
  for (const tool of hostTools) {
    const path = await findTool(tool, env);
    if (path === undefined) missing.push(tool);
    else found[tool] = path;
  }
  for (const plugin of CNI_PLUGINS) {
    if (!(await isExecutable(join(CNI_BIN_DIR, plugin)))) missing.push(`${CNI_BIN_DIR}/${plugin}`);
  }
  const { containerd, ctr, runc, unshare, nsenter } = found;
  if (missing.length > 0 || !containerd || !ctr || !runc || !unshare || !nsenter) {
    throw new ControlPlaneError(
      `a node needs ${missing.join(', ')}: run scripts/install-node-host.sh (Debian's containerd, runc, ` +
        'containernetworking-plugins, iproute2), as root',
    );
  }
  return { containerd, ctr, runc, unshare, nsenter };
}
