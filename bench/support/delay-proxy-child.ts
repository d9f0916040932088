// The delaying proxies (./delay-proxy.ts) in a process of their own: a network's delays do not
// wait for the benchmark's other work (its watches, its floors), which on one event loop would
// hold the proxies' timers and release the chunks they hold together.
//
//   node delay-proxy-child.js <port> <rttMs> <targetPort>...
//   GET /ports: the proxies' ports, in the order of the targets; GET /reset starts a new window
//   of this process's event-loop delay, GET /state answers it (./idle-loop-child.ts's shape).
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startDelayProxy } from './delay-proxy.js';
import type { IdleLoopState } from './idle-loop-child.js';

const [port, rttMs, ...targets] = process.argv.slice(2).map(Number);
if (port === undefined || rttMs === undefined || targets.length === 0)
  throw new Error('usage: delay-proxy-child.js <port> <rttMs> <targetPort>...');
const proxies = await Promise.all(targets.map((target) => startDelayProxy(target, rttMs)));
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
const server = http.createServer((req, res) => {
  if (req.url === '/ports') {
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify(proxies.map((p) => p.port)));
  } else if (req.url === '/reset') {
    delay.reset();
    res.writeHead(200).end();
  } else if (req.url === '/state') {
    const state: IdleLoopState = { p99Ms: delay.percentile(99) / 1e6, maxMs: delay.max / 1e6 };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(state));
  } else {
    res.writeHead(404).end();
  }
});
server.listen(port, '127.0.0.1');
// Never outlive the benchmark.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 1_000).unref();
