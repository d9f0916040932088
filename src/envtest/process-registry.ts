import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot } from './binaries.js';

/**
 * Every etcd and kube-apiserver this process started, so that they are stopped by PID on
 * normal exit, on an uncaught failure and on SIGINT/SIGTERM. A PID file per owner process
 * lets the next harness sweep up children of an owner that was killed with SIGKILL.
 */
interface Tracked {
  readonly pid: number;
  readonly binary: string;
}

const tracked = new Map<number, Tracked>();
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
    if (tracked.size === 0) rmSync(pidFile(), { force: true });
    else writeFileSync(pidFile(), JSON.stringify([...tracked.values()]));
  } catch {
    // Best effort: the sweep is a safety net, not the primary cleanup.
  }
}

/** Starts a tracked child process; it is killed when this process ends for any reason. */
export function spawnTracked(
  binary: string,
  args: readonly string[],
  logFd: number,
  env: Readonly<Record<string, string>> = {},
): ChildProcess {
  installHooks();
  const child = spawn(binary, args, {
    stdio: ['ignore', logFd, logFd],
    env: { ...process.env, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost', ...env },
  });
  const pid = child.pid;
  if (pid !== undefined) {
    tracked.set(pid, { pid, binary });
    persist();
    child.once('exit', () => {
      tracked.delete(pid);
      persist();
    });
  }
  return child;
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
      const entries = JSON.parse(readFileSync(join(runDir(), file), 'utf8')) as Tracked[];
      for (const entry of entries) {
        // Only kill a PID that still runs our binary: PIDs are reused.
        if (commandLine(entry.pid).startsWith(entry.binary)) {
          process.kill(entry.pid, 'SIGKILL');
          killed++;
        }
      }
    } catch {
      // A torn or foreign file: drop it.
    }
    rmSync(join(runDir(), file), { force: true });
  }
  return killed;
}

function isAlive(pid: number): boolean {
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
