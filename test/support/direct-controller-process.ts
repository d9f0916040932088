/** `rtb controller --mode direct` as its own process from the sources, for tests of the command line. */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { CTB_NAME, KCP_PULL_SECRET } from './kcp.js';

/**
 * Starts `rtb controller --mode direct` on the KCP of `kubeconfigPath` with the tests' pull Secret
 * and ClusterTrustBundle and `flags` after them; stdout and stderr are piped.
 */
export function spawnDirectController(
  kubeconfigPath: string,
  flags: readonly string[],
): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli/main.ts',
      'controller',
      '--mode',
      'direct',
      '--kubeconfig',
      kubeconfigPath,
      '--pull-secret',
      KCP_PULL_SECRET,
      '--cluster-trust-bundle',
      CTB_NAME,
      ...flags,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
}
