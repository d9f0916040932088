import { readFileSync } from 'node:fs';
import { isRunning } from '../../support/control-plane.js';

/** A process as /proc names it: PID, start time (clock ticks after boot) and command name. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly start: string;
  readonly comm: string;
}

function stat(pid: number): { start: string; comm: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = text.lastIndexOf(')');
    // Fields after the command name: state is field 3, starttime field 22.
    const fields = text.slice(close + 2).split(' ');
    return { comm: text.slice(text.indexOf('(') + 1, close), start: fields[19] ?? '' };
  } catch {
    return undefined;
  }
}

/** The identities of the PIDs that still exist (a PID alone may be reused by the time it is checked). */
export const identify = (pids: readonly number[]): ProcessIdentity[] =>
  pids.flatMap((pid) => {
    const s = stat(pid);
    return s ? [{ pid, ...s }] : [];
  });

/** The processes of `held` that still run: same PID and start time, not a zombie. */
export const stillRunning = (held: readonly ProcessIdentity[]): ProcessIdentity[] =>
  held.filter((p) => isRunning(p.pid) && stat(p.pid)?.start === p.start);
