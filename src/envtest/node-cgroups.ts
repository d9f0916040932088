import { mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';

/**
 * cgroup v1 helpers of the node (this machine mounts v1 controllers plus a v2 `unified` tree;
 * kubelet and runc use the v1 controllers). Synchronous, because exit hooks use them.
 */

/** cpu.shares of a node's cgroups: four busy host processes per core of the machine. */
export const NODE_CPU_SHARES = 4 * 1024 * availableParallelism();

/** Mount points of the mounted cgroup v1 hierarchies (`/sys/fs/cgroup/pids`, …). */
export function cgroupV1Hierarchies(): string[] {
  return cgroupMounts(['cgroup']);
}

/** Mount points of every cgroup hierarchy, v1 and the hybrid v2 one that runc also uses. */
function cgroupMounts(types: readonly string[] = ['cgroup', 'cgroup2']): string[] {
  let mounts = '';
  try {
    mounts = readFileSync('/proc/self/mounts', 'utf8');
  } catch {
    return [];
  }
  return mounts
    .split('\n')
    .map((line) => line.split(' '))
    .filter((fields) => types.includes(fields[2] ?? '') && fields[1] !== undefined)
    .map((fields) => fields[1] ?? '');
}

/**
 * The cgroup under which a node of this process lives: this process's own memory cgroup, so
 * that whoever accounts (or ends) this process's memory covers its containers too.
 */
export function ownCgroupBase(): string {
  return ownCgroupOf('memory');
}

/** This process's cgroup in the v1 hierarchy of `controller` (the root where none is named). */
function ownCgroupOf(controller: string): string {
  try {
    for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
      const [, controllers, path] = line.split(':');
      if (controllers?.split(',').includes(controller) && path) return path;
    }
  } catch {
    // No /proc: the root.
  }
  return '/';
}

/**
 * Creates `root` (and `root/runtime` for containerd and its shims) in every v1 hierarchy, and
 * returns the first folder it had to create in each, so cleanup removes no more than that.
 * A new cpuset cgroup has no CPUs or memory nodes: it gets its parent's, so children work.
 */
export function createCgroupRoot(root: string): string[] {
  const created: string[] = [];
  for (const hierarchy of cgroupV1Hierarchies()) {
    const dir = join(hierarchy, root);
    const first = mkdirSync(join(dir, 'runtime'), { recursive: true });
    if (first !== undefined) created.push(first);
    if (hierarchy.endsWith('/cpu')) {
      // A cgroup weighs as much as one process of its parent: a node's Pods, all in it, got about
      // one host process's share of the CPU and stalled for seconds on a busy machine (its
      // webhook's calls timing out), where a real node's Pods own its cores. Every cgroup on the
      // way from this process's own cpu cgroup (the node's root may sit under another
      // controller's path) down to the node gets a node's weight.
      const own = join(hierarchy, ownCgroupOf('cpu'));
      for (const [, child] of chain(hierarchy, root)) {
        const below = relative(own, child);
        if (below !== '' && !below.startsWith('..') && !child.endsWith('/runtime'))
          writeFileSync(join(child, 'cpu.shares'), String(NODE_CPU_SHARES));
      }
    }
    if (hierarchy.endsWith('/cpuset')) {
      for (const [parent, child] of chain(hierarchy, root)) {
        for (const file of ['cpuset.cpus', 'cpuset.mems']) {
          if (readFileSync(join(child, file), 'utf8').trim() !== '') continue;
          writeFileSync(join(child, file), readFileSync(join(parent, file), 'utf8').trim());
        }
      }
    }
  }
  return created;
}

/** Parent and child folders from the hierarchy's root down to `root/runtime`. */
function chain(hierarchy: string, root: string): [string, string][] {
  const parts = [...root.split('/').filter(Boolean), 'runtime'];
  const pairs: [string, string][] = [];
  let parent = hierarchy;
  for (const part of parts) {
    const child = join(parent, part);
    pairs.push([parent, child]);
    parent = child;
  }
  return pairs;
}

/** Moves a process into `root/runtime` of every hierarchy (its children follow it there). */
export function moveToRuntimeCgroup(root: string, pid: number): void {
  for (const hierarchy of cgroupV1Hierarchies()) {
    writeFileSync(join(hierarchy, root, 'runtime', 'cgroup.procs'), String(pid));
  }
}

/** Every PID in `root` and below, read from the pids (or first) hierarchy. */
export function cgroupTreePids(root: string): number[] {
  const hierarchies = cgroupV1Hierarchies();
  const hierarchy = hierarchies.find((h) => h.endsWith('/pids')) ?? hierarchies[0];
  if (hierarchy === undefined) return [];
  const pids: number[] = [];
  const walk = (dir: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
      for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) {
        const pid = Number.parseInt(line, 10);
        if (Number.isFinite(pid)) pids.push(pid);
      }
    } catch {
      return;
    }
    for (const entry of entries) if (entry.isDirectory()) walk(join(dir, entry.name));
  };
  walk(join(hierarchy, root));
  return pids;
}

/**
 * SIGKILLs everything in `root` (containerd, its shims, every container) until it is empty, then
 * removes the cgroups, deepest first. Returns whether nothing is left.
 */
export function destroyCgroupTree(
  root: string,
  createdDirs: readonly string[] = [],
  timeoutMs = 5_000,
): boolean {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = cgroupTreePids(root);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
    if (Date.now() > deadline) return false;
    sleepSync(20);
  }
  let clean = true;
  for (const hierarchy of cgroupMounts()) {
    if (!removeTree(join(hierarchy, root), deadline)) clean = false;
  }
  // Ancestors made for this node, if no other node uses them (rmdir refuses non-empty ones).
  for (const first of createdDirs) {
    const hierarchy = cgroupV1Hierarchies().find((h) => first.startsWith(`${h}/`));
    if (hierarchy === undefined) continue;
    let dir = join(hierarchy, root, '..');
    while (dir.length >= first.length && dir.startsWith(first)) {
      try {
        rmdirSync(dir);
      } catch {
        break;
      }
      dir = join(dir, '..');
    }
  }
  return clean;
}

function removeTree(dir: string, deadline: number): boolean {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return true;
  }
  let clean = true;
  for (const entry of entries) {
    if (entry.isDirectory() && !removeTree(join(dir, entry.name), deadline)) clean = false;
  }
  // A cgroup whose last task is still being reaped refuses rmdir (EBUSY) for a moment.
  for (;;) {
    try {
      rmdirSync(dir);
      return clean;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return clean;
      if (code !== 'EBUSY' || Date.now() > deadline) return false;
      sleepSync(20);
    }
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
