import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { cacheRoot } from './cache-root.js';
import { ControlPlaneError } from './errors.js';
import { MAX_NODE_SLOTS, nodeNetwork, type NodeNetwork } from './node-network.js';
import { isAlive, sweepOrphans } from './process-registry.js';

/** A node slot held by this process until released. */
export interface NodeSlot {
  readonly network: NodeNetwork;
  /** The lock file (holds this process's PID). */
  readonly lockFile: string;
  /** Gives the slot back (idempotent, synchronous so exit hooks can call it). */
  release(): void;
}

/** Where the slot locks are: beside the PID files of the process registry. */
export function slotDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheRoot(env), 'run', 'node-slots');
}

/**
 * Takes the lowest free slot: a lock file created exclusively, holding our PID. A lock whose
 * owner no longer runs is taken over (its leftovers are swept by the caller before use).
 */
export async function acquireNodeSlot(env: NodeJS.ProcessEnv = process.env): Promise<NodeSlot> {
  const dir = slotDir(env);
  await mkdir(dir, { recursive: true });
  // Nodes of owners that died are cleaned up (and their slots freed) before one is chosen.
  sweepOrphans();
  for (let slot = 0; slot < MAX_NODE_SLOTS; slot++) {
    const lockFile = join(dir, `${slot}.lock`);
    if (!tryLock(lockFile)) {
      const owner = lockOwner(lockFile);
      if (owner === undefined || isAlive(owner)) continue;
      // A dead owner whose node the sweep could not clear: take the lock over.
      rmSync(lockFile, { force: true });
      if (!tryLock(lockFile)) continue;
    }
    let held = true;
    return {
      network: nodeNetwork(slot),
      lockFile,
      release: () => {
        if (!held) return;
        held = false;
        if (lockOwner(lockFile) === process.pid) rmSync(lockFile, { force: true });
      },
    };
  }
  throw new ControlPlaneError(`all ${MAX_NODE_SLOTS} node slots are taken (see ${dir})`);
}

function tryLock(lockFile: string): boolean {
  let fd: number;
  try {
    fd = openSync(lockFile, 'wx');
  } catch {
    return false;
  }
  try {
    writeSync(fd, String(process.pid));
  } finally {
    closeSync(fd);
  }
  return true;
}

function lockOwner(lockFile: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(lockFile, 'utf8'), 10);
    return Number.isFinite(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}
