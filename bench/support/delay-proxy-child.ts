// The delaying proxies (./delay-proxy.ts) in a process of their own: a network's delays do not
// wait for the benchmark's other work (its watches, its floors), which on one event loop would
// hold the proxies' timers and release the chunks they hold together.
//
//   node delay-proxy-child.js <port> <rttMs> <targetPort>...
//   GET /ports: the proxies' ports, in the order of the targets; GET /reset and /state: this
//   process's event-loop delay (./loop-state-server.ts).
import { startDelayProxy } from './delay-proxy.js';
import { serveLoopState } from './loop-state-server.js';

const [port, rttMs, ...targets] = process.argv.slice(2).map(Number);
if (port === undefined || rttMs === undefined || targets.length === 0)
  throw new Error('usage: delay-proxy-child.js <port> <rttMs> <targetPort>...');
const proxies = await Promise.all(targets.map((target) => startDelayProxy(target, rttMs)));
serveLoopState(port, { '/ports': () => proxies.map((p) => p.port) });
