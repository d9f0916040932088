// The closed-loop load generator of the webhook throughput benchmark, run as its own process:
// autocannon over HTTPS keep-alive, a warm-up, then the measured run. Latencies come from
// autocannon's per-response timer (sub-millisecond; its own histogram rounds to whole ms).
//
//   node load-autocannon.js <config.json>    (see LoadConfig; writes the result file)
import autocannon from 'autocannon';
import { writeFileSync } from 'node:fs';
import { CpuWindow } from './proc.js';
import { summarize, type LatencySummary } from './stats.js';
import { childConfig, runChild } from './child-main.js';
import { requestBodies } from './request-bodies.js';

/** What the parent asks for. */
export interface AutocannonConfig {
  readonly url: string;
  readonly bodyFile: string;
  /**
   * Makes every request unique: this text, which must occur in the body, is replaced (every
   * occurrence) in each request by a counter of the same width, shared by all connections, so
   * no body repeats.
   */
  readonly uniqueMarker?: string;
  readonly connections: number;
  readonly warmupSeconds: number;
  readonly durationSeconds: number;
  /** The server under test, for its CPU use during the measured run. */
  readonly serverPid: number;
  readonly resultFile: string;
}

/** What the child writes. */
export interface AutocannonResult {
  readonly requestsPerSecond: number;
  readonly ok: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly seconds: number;
  readonly latency: LatencySummary;
  /** Server CPU seconds per wall second during the measured run (1 = one core). */
  readonly serverCpu: number;
  /** This load generator's CPU seconds per wall second. */
  readonly loadCpu: number;
  /** CPU used by everything else on the machine (other tenants, the cluster), in cores. */
  readonly otherCpu: number;
}

async function main(): Promise<void> {
  const config = childConfig('load-autocannon') as AutocannonConfig;
  const { body, unique: nextBody } = requestBodies(config.bodyFile, config.uniqueMarker);
  const unique =
    nextBody === undefined
      ? {}
      : {
          requests: [
            {
              setupRequest: (request: autocannon.RawRequest) => {
                request.body = nextBody();
                return request;
              },
            },
          ],
        };
  const options = (seconds: number): autocannon.Options => ({
    url: config.url,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    connections: config.connections,
    pipelining: 1,
    duration: seconds,
    timeout: 10,
    renderProgressBar: false,
    renderResultsTable: false,
    renderLatencyTable: false,
    ...unique,
  });

  if (config.warmupSeconds > 0) await autocannon(options(config.warmupSeconds));

  const latencies: number[] = [];
  const window = new CpuWindow(config.serverPid);
  const instance = autocannon(options(config.durationSeconds));
  instance.on('response', (_client, statusCode, _bytes, responseTimeMs) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTimeMs);
  });
  const result = await instance;
  const cpu = window.close();
  // autocannon's own window: from its start to the tick after the duration, over which it counts.
  const seconds = result.duration;
  const out: AutocannonResult = {
    requestsPerSecond: latencies.length / seconds,
    ok: latencies.length,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    seconds,
    latency: summarize(latencies),
    serverCpu: cpu.serverCpu,
    loadCpu: cpu.loadCpu,
    otherCpu: cpu.otherCpu,
  };
  writeFileSync(config.resultFile, JSON.stringify(out));
}

runChild('load-autocannon', main);
