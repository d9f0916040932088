import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { destroyCgroupTree } from './node-cgroups.js';

/**
 * What a node holds on this machine beyond its processes' PIDs: its cgroup tree (containerd,
 * shims and every container live in it), its bridge and its slot lock. Recorded with the PID
 * file of its owner, so that an owner killed by SIGKILL is cleaned up by the next one.
 */
export interface NodeRecord {
  /** kubelet's cgroupRoot. */
  readonly cgroupRoot: string;
  /** Cgroup folders created above the node's own (removed if empty). */
  readonly createdCgroupDirs: readonly string[];
  readonly bridge: string;
  readonly slotLockFile: string;
  /** The PID that holds the slot (the owner process). */
  readonly owner: number;
}

/**
 * Kills every process of the node, removes its cgroups and its bridge (the Pods' veths go with
 * their network namespaces), and frees its slot. Synchronous: exit hooks run it. Best effort.
 */
export function releaseNodeResources(record: NodeRecord): void {
  // A slot taken over since (its owner died and another process swept it) is not ours to clear.
  if (lockHolder(record.slotLockFile) !== record.owner) return;
  clearNode(record);
  rmSync(record.slotLockFile, { force: true });
}

/** Kills the node's processes and removes its cgroups and bridge; the slot stays held. */
export function clearNode(record: NodeRecord): void {
  destroyCgroupTree(record.cgroupRoot, record.createdCgroupDirs);
  spawnSync('ip', ['link', 'delete', record.bridge], { stdio: 'ignore' });
}

function lockHolder(lockFile: string): number | undefined {
  try {
    return Number.parseInt(readFileSync(lockFile, 'utf8'), 10);
  } catch {
    return undefined;
  }
}
