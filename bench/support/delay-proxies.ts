// Starts the delaying proxies in their own process (./delay-proxy-child.ts) and learns their ports.
import { freePort } from '../../src/envtest/free-port.js';
import { waitReady } from '../../src/envtest/wait-ready.js';
import { loopAt, type IdleLoop } from './idle-loop.js';
import { startNode } from './processes.js';

/** Running proxies, one per target. */
export interface DelayProxies {
  /** The proxies' ports on 127.0.0.1, in the order of the targets. */
  readonly ports: readonly number[];
  /** The proxies' process's event loop: how late they release what they hold. */
  readonly loop: IdleLoop;
  stop(): Promise<void>;
}

/**
 * One proxy per target port with a round trip of `rttMs` (`script`: ChildScripts.delayProxyChild),
 * its log in `dir`.
 */
export async function startDelayProxies(
  script: string,
  dir: string,
  targetPorts: readonly number[],
  rttMs: number,
): Promise<DelayProxies> {
  const port = await freePort();
  const proc = startNode('delay-proxies', script, [port, rttMs, ...targetPorts].map(String), dir);
  const base = `http://127.0.0.1:${port}`;
  await waitReady(proc, `${base}/ports`, undefined, 30_000);
  const ports = (await (await fetch(`${base}/ports`)).json()) as number[];
  return { ports, loop: loopAt(base), stop: () => proc.stop() };
}
