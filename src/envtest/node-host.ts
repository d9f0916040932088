import { join } from 'node:path';
import { isExecutable } from './go-binary.js';

/**
 * What a node, its local registries and the image build take from the host: Debian's packages
 * (scripts/install-node-host.sh installs them) and gcc for the pause image.
 */
export const NODE_HOST_TOOLS = [
  'containerd',
  'ctr',
  'runc',
  'unshare',
  'nsenter',
  'ip',
  'docker-registry',
  'htpasswd',
  'skopeo',
  'umoci',
  'mmdebstrap',
  'gcc',
] as const;

const searchPath = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/** Where Debian's containernetworking-plugins puts the CNI plugins a node uses. */
export const CNI_BIN_DIR = '/usr/lib/cni';
/** The CNI plugins a node's network uses. */
export const CNI_PLUGINS = ['bridge', 'host-local', 'loopback', 'portmap'] as const;

/** The first executable named `tool` on PATH or in the system folders. */
export async function findTool(
  tool: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  const dirs = [...(env.PATH ?? '').split(':').filter(Boolean), ...searchPath];
  for (const dir of dirs) {
    if (await isExecutable(join(dir, tool))) return join(dir, tool);
  }
  return undefined;
}

/**
 * Why this host cannot run a node (not root, or a tool missing), or undefined when it can. Cheap:
 * it builds nothing, so `rtb local` and the test runner ask it before a long build.
 */
export async function nodeHostProblem(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'a node needs root (kubelet, containerd and the Pods’ network)';
  const missing: string[] = [];
  for (const tool of NODE_HOST_TOOLS) if ((await findTool(tool, env)) === undefined) missing.push(tool);
  for (const plugin of CNI_PLUGINS)
    if (!(await isExecutable(join(CNI_BIN_DIR, plugin)))) missing.push(`${CNI_BIN_DIR}/${plugin}`);
  if (missing.length === 0) return undefined;
  return `a node needs ${missing.join(', ')}: run scripts/install-node-host.sh (Debian 12 packages), as root, once`;
}
