// The host set-up of scripts/run-tests.mjs: before a full run, the Debian packages the node, the
// image and the monitoring tests need (scripts/install-node-host.sh) are checked, installed where
// this process can, and otherwise named with the command that installs them.
import { spawnSync } from 'node:child_process';

/** The script that checks (`--check`) and installs the host's packages. */
export const INSTALL_SCRIPT = 'scripts/install-node-host.sh';

/** What the host is and offers. */
export interface HostFacts {
  /** The packages the script reports missing; undefined when it cannot tell (no dpkg: not Debian). */
  readonly missing: readonly string[] | undefined;
  readonly root: boolean;
  /** Whether apt-get is on this host. */
  readonly apt: boolean;
  /** Whether `sudo -n` works (root without a password); only asked when needed. */
  readonly sudo: () => boolean;
}

/** What to do before the tests. */
export type HostAction =
  | { readonly kind: 'ready' }
  /** No dpkg: the packages cannot be checked; the node's own tool check (`rtb control-plane host`) decides. */
  | { readonly kind: 'unknown' }
  | { readonly kind: 'install'; readonly packages: readonly string[]; readonly command: readonly string[] }
  | { readonly kind: 'stop'; readonly message: string };

const UNIT = '`npm run test:unit` needs none of them';

/**
 * Decides, without I/O, what to do about the host's packages: nothing when all are there (the
 * common case, which costs no apt call); install them when this process is root, or can become
 * root through `sudo -n`, and apt-get is there; otherwise stop before any test, saying exactly
 * what to run.
 */
export function decideHostSetup(facts: HostFacts): HostAction {
  const { missing } = facts;
  if (missing === undefined) return { kind: 'unknown' };
  if (missing.length === 0) return { kind: 'ready' };
  const list = missing.join(' ');
  if (!facts.apt)
    return {
      kind: 'stop',
      message:
        `the tests need the Debian 12 packages ${list}, and this host has no apt-get: install them ` +
        `(or run on Debian 12), then run \`npm test\` again; ${UNIT}`,
    };
  if (facts.root) return { kind: 'install', packages: missing, command: ['bash', INSTALL_SCRIPT] };
  if (facts.sudo())
    return { kind: 'install', packages: missing, command: ['sudo', '-n', 'bash', INSTALL_SCRIPT] };
  return {
    kind: 'stop',
    message:
      `the tests need the Debian packages ${list}, and installing them needs root: ` +
      `run \`sudo bash ${INSTALL_SCRIPT}\` once, then \`npm test\` again; ${UNIT}`,
  };
}

/** Whether `name` is an executable on PATH. */
function onPath(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** The facts of this host, from `scripts/install-node-host.sh --check` (run from `root`). */
export function hostFacts(root: string): HostFacts {
  const check = spawnSync('bash', [INSTALL_SCRIPT, '--check'], { cwd: root, encoding: 'utf8' });
  const missing =
    check.status === 0
      ? check.stdout
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line !== '')
      : undefined;
  return {
    missing,
    root: process.getuid?.() === 0,
    apt: onPath('apt-get'),
    sudo: () => onPath('sudo') && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0,
  };
}
