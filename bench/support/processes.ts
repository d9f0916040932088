import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedProcess } from '../../src/envtest/managed-process.js';
import { trackTempDir, untrackTempDir } from '../../src/envtest/process-registry.js';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Where the benchmark compiles the code its child processes run (git-ignored). */
const BUILD_DIR = join(ROOT, '.cache', 'bench-build');

/** Entry points of the compiled children. */
export interface ChildScripts {
  /** `rtb` itself, compiled from the current src/ (what the image runs: plain node, no loader). */
  readonly rtb: string;
  readonly bareServer: string;
  readonly loadAutocannon: string;
  readonly loadPaced: string;
  /** Hostile bodies in a closed loop beside valid requests at a fixed rate (`support/load-hostile.ts`). */
  readonly loadHostile: string;
  /** The KCP controller in direct mode (`support/controller-child.ts`). */
  readonly controllerChild: string;
  /** A runtime's webhook with the drift channel (`support/drift-webhook-child.ts`). */
  readonly driftWebhookChild: string;
  /** A process measuring its own event-loop delay only (`support/idle-loop-child.ts`). */
  readonly idleLoopChild: string;
  /** A hostile drift client: reports and attestations without pause (`support/drift-spam-child.ts`). */
  readonly driftSpamChild: string;
  /** Delaying proxies in a process of their own (`support/delay-proxy-child.ts`). */
  readonly delayProxyChild: string;
}

let built: ChildScripts | undefined;

/**
 * Compiles src/ and the benchmark's child programs with tsc into `.cache/bench-build`, so every
 * server under test runs as plain JavaScript on `node`, like the product, without a TypeScript
 * loader thread in its memory or its start-up.
 */
export function buildChildren(say: (line: string) => void): ChildScripts {
  if (built) return built;
  const started = Date.now();
  const tsc = spawnSync(
    process.execPath,
    [
      join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      join(ROOT, 'bench', 'tsconfig.children.json'),
    ],
    { cwd: ROOT, encoding: 'utf8' },
  );
  // Other work in progress may leave type errors in the tree; tsc still emits (status 2), and
  // the benchmark goes on with a warning. Anything else (status 1: no output) is fatal.
  if (tsc.status === 2) {
    say(`warning: tsc reported type errors (JavaScript emitted anyway):\n${tsc.stdout.trim()}`);
  } else if (tsc.status !== 0) {
    throw new Error(`tsc could not build the benchmark children:\n${tsc.stdout}${tsc.stderr}`);
  }
  // src/version.ts reads ../package.json; it also makes the output ES modules.
  mkdirSync(BUILD_DIR, { recursive: true });
  copyFileSync(join(ROOT, 'package.json'), join(BUILD_DIR, 'package.json'));
  say(`compiled src/ and bench/support/ children with tsc in ${Date.now() - started} ms`);
  built = {
    rtb: join(BUILD_DIR, 'src', 'cli', 'main.js'),
    bareServer: join(BUILD_DIR, 'bench', 'support', 'bare-server.js'),
    loadAutocannon: join(BUILD_DIR, 'bench', 'support', 'load-autocannon.js'),
    loadPaced: join(BUILD_DIR, 'bench', 'support', 'load-paced.js'),
    loadHostile: join(BUILD_DIR, 'bench', 'support', 'load-hostile.js'),
    controllerChild: join(BUILD_DIR, 'bench', 'support', 'controller-child.js'),
    driftWebhookChild: join(BUILD_DIR, 'bench', 'support', 'drift-webhook-child.js'),
    idleLoopChild: join(BUILD_DIR, 'bench', 'support', 'idle-loop-child.js'),
    driftSpamChild: join(BUILD_DIR, 'bench', 'support', 'drift-spam-child.js'),
    delayProxyChild: join(BUILD_DIR, 'bench', 'support', 'delay-proxy-child.js'),
  };
  return built;
}

/** A scratch folder removed at the end, also when the run fails or is interrupted. */
export async function scratchDir(prefix: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  trackTempDir(dir);
  return {
    dir,
    remove: async () => {
      await rm(dir, { recursive: true, force: true });
      untrackTempDir(dir);
    },
  };
}

/**
 * Starts `node <script> ...args` as a tracked child (stopped by PID on exit, on failure and on
 * SIGINT/SIGTERM by the control plane's process registry), its output in `<dir>/<name>.log`.
 */
export function startNode(
  name: string,
  script: string,
  args: readonly string[],
  dir: string,
  nodeOptions: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
): ManagedProcess {
  const proc = new ManagedProcess(
    name,
    process.execPath,
    [...nodeOptions, script, ...args],
    join(dir, `${name}.log`),
    { env },
  );
  proc.start();
  return proc;
}

/** Runs a node child to completion; throws with its log tail if it fails. */
export async function runNode(
  name: string,
  script: string,
  args: readonly string[],
  dir: string,
  cpu?: number,
): Promise<void> {
  const proc = startNode(name, script, args, dir);
  if (cpu !== undefined && proc.pid !== undefined) pinToCpu(proc.pid, cpu);
  const code = await proc.waitExit();
  if (code !== 0) throw new Error(`${name} exited with ${String(code)}; log tail:\n${proc.logTail()}`);
}

/** Whether processes can be pinned (taskset present and at least two CPUs). */
export function canPin(): boolean {
  if (availableParallelism() < 2) return false;
  return spawnSync('taskset', ['-V'], { encoding: 'utf8' }).status === 0;
}

/** Pins every thread of a process to one CPU (threads started later inherit it). */
export function pinToCpu(pid: number, cpu: number): void {
  const r = spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`taskset could not pin ${pid} to CPU ${cpu}: ${r.stderr}`);
}

/** Sleeps. */
export function sleep(msDelay: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, msDelay));
}
