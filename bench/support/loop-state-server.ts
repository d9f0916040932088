// What a benchmark child that measures its own event loop serves, and its tie to the parent.
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** What `/state` answers (ms). */
export interface LoopState {
  readonly p99Ms: number;
  readonly maxMs: number;
}

/**
 * Measures this process's event-loop delay at 10 ms resolution and serves it on 127.0.0.1:`port`:
 * GET /reset starts a new window, GET /state answers it; `routes` answer other paths with JSON.
 * The process exits once its parent is gone.
 */
export function serveLoopState(port: number, routes: Readonly<Record<string, () => unknown>> = {}): void {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const server = http.createServer((req, res) => {
    const route = routes[req.url ?? ''];
    if (req.url === '/reset') {
      delay.reset();
      res.writeHead(200).end();
    } else if (req.url === '/state') {
      const state: LoopState = { p99Ms: delay.percentile(99) / 1e6, maxMs: delay.max / 1e6 };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(state));
    } else if (route !== undefined) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(route()));
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
}
