import { readFileSync } from 'node:fs';
import { after, before } from 'node:test';
import { ControlPlane, type ControlPlaneOptions } from '../../src/envtest/control-plane.js';

/**
 * Starts one real control plane for the calling test file, or for the enclosing `describe` when
 * called inside one (before its tests), and stops it after them. Returns a getter because the
 * plane exists only once `before` has run.
 */
export function useControlPlane(options: ControlPlaneOptions = {}): () => ControlPlane {
  let plane: ControlPlane | undefined;
  before(async () => {
    plane = await ControlPlane.start(options);
  });
  after(async () => {
    await plane?.stop();
  });
  return () => {
    if (!plane) throw new Error('the control plane is not started (use it inside a test)');
    return plane;
  };
}

/** Whether a PID still runs (zombies included as gone). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // An exited process whose parent has not reaped it yet (a zombie) runs no more.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
