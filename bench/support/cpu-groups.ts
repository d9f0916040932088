import { cpuSeconds, machineCpuSeconds } from './proc.js';

/** Cores used on average during a window, by named group of processes. */
export interface GroupCpu {
  readonly seconds: number;
  /** Per group (1 = one core busy for the whole window). */
  readonly cores: Readonly<Record<string, number>>;
  /** This (benchmark) process. */
  readonly bench: number;
  /** Everything else on the machine: other work on the machine. */
  readonly others: number;
  /** The whole machine. */
  readonly machine: number;
}

function safeCpu(pid: number): number {
  try {
    return cpuSeconds(pid);
  } catch {
    return 0; // gone meanwhile
  }
}

/**
 * CPU use of groups of processes (controller, API servers, etcd, …), of this process and of the
 * rest of the machine over a window. Like `CpuWindow`, for more than one server process.
 */
export class GroupCpuWindow {
  private readonly start: Record<string, number>;
  private readonly bench0 = process.cpuUsage();
  private readonly machine0 = machineCpuSeconds();
  private readonly t0 = performance.now();

  constructor(private readonly groups: Readonly<Record<string, readonly number[]>>) {
    this.start = Object.fromEntries(
      Object.entries(groups).map(([name, pids]) => [name, pids.reduce((a, p) => a + safeCpu(p), 0)]),
    );
  }

  close(): GroupCpu {
    const seconds = (performance.now() - this.t0) / 1000;
    const cores: Record<string, number> = {};
    let ours = 0;
    for (const [name, pids] of Object.entries(this.groups)) {
      const used = pids.reduce((a, p) => a + safeCpu(p), 0) - (this.start[name] ?? 0);
      cores[name] = used / seconds;
      ours += used;
    }
    const b = process.cpuUsage(this.bench0);
    const bench = (b.user + b.system) / 1e6;
    const machine = machineCpuSeconds().busy - this.machine0.busy;
    return {
      seconds,
      cores,
      bench: bench / seconds,
      others: Math.max(0, (machine - ours - bench) / seconds),
      machine: machine / seconds,
    };
  }
}

/** `controller 0.41, apiservers 0.62, etcd 0.10, bench 0.05, others 0.30 cores` */
export function describeCpu(c: GroupCpu): string {
  const parts = Object.entries(c.cores).map(([k, v]) => `${k} ${v.toFixed(2)}`);
  return `${[...parts, `bench ${c.bench.toFixed(2)}`, `others ${c.others.toFixed(2)}`].join(', ')} cores`;
}

/** Sum of the samples of a metric in Prometheus text format whose labels include `labels`. */
export function metricValue(
  text: string,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const labelText = m[2] ?? '';
    if (!Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`))) continue;
    const value = Number(m[3]);
    if (Number.isFinite(value)) sum += value;
  }
  return sum;
}
