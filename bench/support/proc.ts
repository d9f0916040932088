import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

/** VmRSS and VmHWM (peak) of a process, in KiB, from /proc/<pid>/status. */
export function memoryKib(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
    if (!m?.[1]) throw new Error(`no ${name} in /proc/${pid}/status`);
    return Number(m[1]);
  };
  return { rss: field('VmRSS'), peak: field('VmHWM') };
}

let clockTicks: number | undefined;

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/** Busy and total CPU seconds of the whole machine so far, from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user).
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  return { busy: (total - idle) / clockTicks, total: total / clockTicks };
}

/** CPU use during a window: the server, this process (the load) and everything else on the machine. */
export class CpuWindow {
  private readonly server0: number;
  private readonly load0 = process.cpuUsage();
  private readonly machine0 = machineCpuSeconds();
  private readonly started = process.hrtime.bigint();

  constructor(private readonly serverPid: number) {
    this.server0 = cpuSeconds(serverPid);
  }

  /** Cores used on average since the window opened (1 = one core busy). */
  close(): { seconds: number; serverCpu: number; loadCpu: number; otherCpu: number } {
    const seconds = Number(process.hrtime.bigint() - this.started) / 1e9;
    const serverCpu = (cpuSeconds(this.serverPid) - this.server0) / seconds;
    const load = process.cpuUsage(this.load0);
    const loadCpu = (load.user + load.system) / 1e6 / seconds;
    const machine = machineCpuSeconds().busy - this.machine0.busy;
    return { seconds, serverCpu, loadCpu, otherCpu: Math.max(0, machine / seconds - serverCpu - loadCpu) };
  }
}

/**
 * Resets a process's peak resident memory (VmHWM) to its current VmRSS, so that the next peak
 * read is the peak of what follows (Linux: `5` written to /proc/<pid>/clear_refs). Returns
 * false where that is not allowed; the peak then includes what came before.
 */
export function resetPeakMemory(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
