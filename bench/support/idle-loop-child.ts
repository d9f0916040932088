// A node process that does nothing but measure its own event-loop delay: the same-run baseline of
// what the machine's load alone does to an event loop (a 2-core box shared with API servers and
// other work deschedules every process now and then).
//
//   node idle-loop-child.js <port>     GET /reset starts a new window; GET /state answers it.
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** What `/state` answers (ms). */
export interface IdleLoopState {
  readonly p99Ms: number;
  readonly maxMs: number;
}

const port = Number(process.argv[2]);
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();
const server = http.createServer((req, res) => {
  if (req.url === '/reset') {
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
