import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot } from './cache-root.js';
import { releaseNodeResources, type NodeRecord } from './node-resources.js';

/**
 * Every etcd and kube-apiserver this process started, and every other child it tracks, so that
 * they are stopped by PID on normal exit, on an uncaught failure and on SIGINT/SIGTERM. A PID file
 * per owner process lets the next harness sweep up children of an owner killed with SIGKILL.
 */
interface Tracked {
  readonly pid: number;
  readonly binary: string;
}

/** The PID file's content. */
interface OwnerFile {
  readonly processes: Tracked[];
  readonly nodes: NodeRecord[];
}

const tracked = new Map<number, Tracked>();
const nodes = new Map<string, NodeRecord>();
const tempDirs = new Set<string>();
let hooksInstalled = false;

function runDir(): string {
  return join(cacheRoot(), 'run');
}

function pidFile(): string {
  return join(runDir(), `${process.pid}.json`);
}

function persist(): void {
  try {
    mkdirSync(runDir(), { recursive: true });
    if (tracked.size === 0 && nodes.size === 0) rmSync(pidFile(), { force: true });
    else {
      const content: OwnerFile = { processes: [...tracked.values()], nodes: [...nodes.values()] };
      writeFileSync(pidFile(), JSON.stringify(content));
    }
  } catch {
    // Best effort: the sweep is a safety net, not the primary cleanup.
  }
}

/** How {@link spawnTracked} starts its child. */
export interface SpawnTrackedOptions {
  /** A program that execs the binary in the same PID (`unshare --mount --`, `nsenter …`). */
  readonly launcher?: readonly string[];
  /** More environment variables for the child. */
  readonly env?: Readonly<Record<string, string>>;
}

/** Starts a tracked child process; it is killed when this process ends for any reason. */
export function spawnTracked(
  binary: string,
  args: readonly string[],
  logFd: number,
  { launcher = [], env = {} }: SpawnTrackedOptions = {},
): ChildProcess {
  installHooks();
  const program = launcher[0] ?? binary;
  const prefix = launcher.length > 0 ? [...launcher.slice(1), binary] : [];
  const child = spawn(program, [...prefix, ...args], {
    stdio: ['ignore', logFd, logFd],
    env: { ...process.env, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost', ...env },
  });
  trackChild(child, binary);
  return child;
}

/**
 * Tracks a child started elsewhere (with pipes, say): it is killed when this process ends for any
 * reason. The sweep after an owner's SIGKILL kills it only while its command line still begins
 * with `binary` (PIDs are reused; a child that exec'd something else stays).
 */
export function trackChild(child: ChildProcess, binary: string): void {
  installHooks();
  const pid = child.pid;
  if (pid === undefined) return;
  tracked.set(pid, { pid, binary });
  persist();
  child.once('exit', () => {
    tracked.delete(pid);
    persist();
  });
}

/** Registers a node whose cgroups, bridge and slot are released when this process ends. */
export function trackNode(record: NodeRecord): void {
  installHooks();
  nodes.set(record.cgroupRoot, record);
  persist();
}

/** Forgets a node that was released already. */
export function untrackNode(record: NodeRecord): void {
  nodes.delete(record.cgroupRoot);
  persist();
}

/** Registers a temporary directory to delete when this process ends. */
export function trackTempDir(dir: string): void {
  installHooks();
  tempDirs.add(dir);
}

/** Forgets a temporary directory that was already deleted. */
export function untrackTempDir(dir: string): void {
  tempDirs.delete(dir);
}

/** PIDs of the children still running (for tests of the cleanup itself). */
export function trackedPids(): number[] {
  return [...tracked.keys()];
}

function killAllNow(): void {
  for (const { pid } of tracked.values()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  tracked.clear();
  // After the kubelets: nothing recreates a container while the cgroup trees are emptied.
  for (const record of nodes.values()) releaseNodeResources(record);
  nodes.clear();
  persist();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  sweepOrphans();
  // 'exit' runs on normal exit, process.exit() and after an uncaught exception; only
  // synchronous work is possible there, so the children get SIGKILL (their data is scratch).
  process.on('exit', killAllNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      // Somebody else (the CLI) handles this signal and stops the control plane gracefully;
      // the 'exit' hook stays the safety net.
      if (process.listenerCount(signal) > 1) return;
      killAllNow();
      // Re-raise with the default action so the exit status says which signal ended us.
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

/** Kills children recorded by owners that no longer run (an owner killed by SIGKILL, say). */
export function sweepOrphans(): number {
  let killed = 0;
  let files: string[] = [];
  try {
    files = readdirSync(runDir());
  } catch {
    return 0;
  }
  for (const file of files) {
    const owner = Number.parseInt(file, 10);
    if (!Number.isFinite(owner) || owner === process.pid || isAlive(owner)) continue;
    try {
      const parsed = JSON.parse(readFileSync(join(runDir(), file), 'utf8')) as OwnerFile | Tracked[];
      // Older owners wrote a bare array of processes.
      const content: OwnerFile = Array.isArray(parsed) ? { processes: parsed, nodes: [] } : parsed;
      for (const entry of content.processes) {
        // Only kill a PID that still runs our binary: PIDs are reused.
        if (commandLine(entry.pid).startsWith(entry.binary)) {
          process.kill(entry.pid, 'SIGKILL');
          killed++;
        }
      }
      for (const record of content.nodes) releaseNodeResources(record);
    } catch {
      // A torn or foreign file: drop it.
    }
    rmSync(join(runDir(), file), { force: true });
  }
  return killed;
}

/** Whether a process with this PID exists (EPERM: it does, owned by somebody else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
  } catch {
    return '';
  }
}
