// The same-run baseline of event-loop delay: a process that does nothing but measure its own
// (./idle-loop-child.ts), so that a server's figure can be told from what the machine's load
// alone does to any event loop.
import { freePort } from '../../src/envtest/free-port.js';
import { waitReady } from '../../src/envtest/wait-ready.js';
import type { LoopState } from './loop-state-server.js';
import { startNode } from './processes.js';

/** The idle process's event loop: the machine's share of any event-loop delay. */
export interface IdleLoop {
  reset(): Promise<void>;
  state(): Promise<LoopState>;
}

/** Starts the idle child (`script`: ChildScripts.idleLoopChild), its log in `dir`. */
export async function startIdleLoop(
  script: string,
  dir: string,
): Promise<{ loop: IdleLoop; stop: () => Promise<void> }> {
  const port = await freePort();
  const proc = startNode('idle-loop', script, [String(port)], dir);
  const base = `http://127.0.0.1:${port}`;
  await waitReady(proc, `${base}/state`, undefined, 30_000);
  return { loop: loopAt(base), stop: () => proc.stop() };
}

/** The event loop a child measures of itself, served at `base` (`/reset`, `/state`). */
export function loopAt(base: string): IdleLoop {
  return {
    reset: async () => {
      await fetch(`${base}/reset`);
    },
    state: async () => (await (await fetch(`${base}/state`)).json()) as LoopState,
  };
}
