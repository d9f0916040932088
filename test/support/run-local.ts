import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** What a run of `rtb local` printed and left. */
export interface Run {
  code: number | null;
  out: string;
  /** Every process below it when it said it was ready (before it stopped anything). */
  pids: number[];
}

/** Options of {@link runLocal}. */
export interface RunLocalOptions {
  /** Sent once it says it is ready ("Press Ctrl-C to stop"). */
  readonly signal?: NodeJS.Signals;
}

const READY = /Press Ctrl-C to stop|--once: stopping/;

/** Runs `rtb local` from source; notes its process tree once ready and sends `signal` then. */
export function runLocal(args: string[], o: RunLocalOptions = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'local', ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    let pids: number[] | undefined;
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (pids === undefined && child.pid !== undefined && READY.test(out)) {
        pids = descendants(child.pid);
        if (o.signal) child.kill(o.signal);
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      resolve({ code, out, pids: pids ?? [] });
    });
  });
}

/** Every process below `parent` (Linux lists each thread's children in /proc). */
function descendants(parent: number): number[] {
  const found: number[] = [];
  const walk = (pid: number): void => {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let children: number[] = [];
      try {
        children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8')
          .trim()
          .split(/\s+/)
          .filter(Boolean)
          .map(Number);
      } catch {
        // The thread ended meanwhile.
      }
      for (const c of children) {
        found.push(c);
        walk(c);
      }
    }
  };
  walk(parent);
  return found;
}
