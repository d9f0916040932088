import type { ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { ControlPlaneError } from './errors.js';
import { spawnTracked, type SpawnTrackedOptions } from './process-registry.js';

/** A long-running child (etcd, kube-apiserver, the node's) with its log file and a graceful stop. */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<number | null> = Promise.resolve(null);

  constructor(
    readonly name: string,
    private readonly binary: string,
    private readonly args: readonly string[],
    readonly logPath: string,
    private readonly spawnOptions: SpawnTrackedOptions = {},
  ) {}

  /** The PID while running. */
  get pid(): number | undefined {
    return this.child?.exitCode === null ? this.child.pid : undefined;
  }

  /** Whether the process is running. */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process, appending its output to the log file. */
  start(): void {
    if (this.running) throw new ControlPlaneError(`${this.name} is already running`);
    const fd = openSync(this.logPath, 'a');
    try {
      const child = spawnTracked(this.binary, this.args, fd, this.spawnOptions);
      this.child = child;
      this.exited = new Promise((resolve) => {
        child.once('exit', (code) => {
          resolve(code);
        });
        child.once('error', () => {
          resolve(-1);
        });
      });
    } finally {
      closeSync(fd);
    }
  }

  /** Resolves when the process has exited (immediately if it never ran). */
  waitExit(): Promise<number | null> {
    return this.exited;
  }

  /** SIGTERM, then SIGKILL after the grace period; resolves once the process is gone. */
  async stop(graceMs = 10_000): Promise<void> {
    const child = this.child;
    if (!child || !this.running) return;
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => {
        resolve('timeout');
      }, graceMs);
    });
    const result = await Promise.race([this.exited.then(() => 'exited' as const), timeout]);
    clearTimeout(timer);
    if (result === 'timeout') {
      child.kill('SIGKILL');
      await this.exited;
    }
  }

  /** The last lines of the log, for error messages. */
  logTail(lines = 30): string {
    try {
      return readFileSync(this.logPath, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}
