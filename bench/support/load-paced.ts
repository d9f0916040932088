// The fixed-rate (open-loop) load generator of the webhook benchmark, run as its own process.
// autocannon's rate limit is a per-second budget that its connections spend back to back, so
// a "1,000 requests/s" run with it is a burst at full speed each second; this child instead
// sends request i at t0 + i/rate on a keep-alive node:https Agent (verifying the server
// certificate, as the API server does), whether or not earlier answers are back.
//
//   node load-paced.js <config.json>    (see PacedConfig; writes the result file)
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { CpuWindow } from './proc.js';
import { summarize, type LatencySummary } from './stats.js';
import { childConfig, runChild } from './child-main.js';
import { requestBodies } from './request-bodies.js';

/** What the parent asks for. */
export interface PacedConfig {
  readonly url: string;
  readonly bodyFile: string;
  /** Every occurrence replaced by a counter of the same width in each request: no body repeats. */
  readonly uniqueMarker?: string;
  readonly caFile: string;
  /** Requests per second. */
  readonly rate: number;
  readonly warmupSeconds: number;
  readonly durationSeconds: number;
  readonly maxSockets: number;
  readonly serverPid: number;
  readonly resultFile: string;
}

/** What the child writes. */
export interface PacedResult {
  readonly rate: number;
  readonly achievedRate: number;
  readonly ok: number;
  readonly failed: number;
  /** From handing the request to the Agent to the last byte of the answer. */
  readonly latency: LatencySummary;
  /** From the request's scheduled send time to the last byte (includes the pacer's lateness). */
  readonly fromSchedule: LatencySummary;
  /** How late the pacer sent requests against their schedule. */
  readonly sendLag: LatencySummary;
  readonly serverCpu: number;
  readonly loadCpu: number;
  /** CPU used by everything else on the machine (other tenants, the cluster), in cores. */
  readonly otherCpu: number;
}

interface Phase {
  readonly latency: number[];
  readonly fromSchedule: number[];
  readonly sendLag: number[];
  readonly failed: number;
  readonly seconds: number;
}

function runPhase(config: PacedConfig, agent: Agent, bodyFor: () => Buffer, seconds: number): Promise<Phase> {
  const total = Math.round(config.rate * seconds);
  const intervalNs = 1e9 / config.rate;
  const latency: number[] = [];
  const fromSchedule: number[] = [];
  const sendLag: number[] = [];
  let failed = 0;
  let sent = 0;
  let done = 0;
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => {
    const finish = (): void => {
      done++;
      if (done === total) {
        resolve({
          latency,
          fromSchedule,
          sendLag,
          failed,
          seconds: Number(process.hrtime.bigint() - t0) / 1e9,
        });
      }
    };
    const send = (scheduled: bigint): void => {
      const body = bodyFor();
      const start = process.hrtime.bigint();
      const req = request(
        config.url,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (res) => {
          res.on('data', () => undefined);
          res.on('end', () => {
            const end = process.hrtime.bigint();
            if (res.statusCode === 200) {
              latency.push(Number(end - start) / 1e6);
              fromSchedule.push(Number(end - scheduled) / 1e6);
              sendLag.push(Number(start - scheduled) / 1e6);
            } else {
              failed++;
            }
            finish();
          });
        },
      );
      req.on('error', () => {
        failed++;
        finish();
      });
      req.end(body);
    };
    const pump = (): void => {
      const elapsed = Number(process.hrtime.bigint() - t0);
      const due = Math.min(total, Math.floor(elapsed / intervalNs) + 1);
      while (sent < due) {
        send(t0 + BigInt(Math.round(sent * intervalNs)));
        sent++;
      }
      if (sent < total) setTimeout(pump, 1);
    };
    pump();
  });
}

async function main(): Promise<void> {
  const config = childConfig('load-paced') as PacedConfig;
  const { body, unique } = requestBodies(config.bodyFile, config.uniqueMarker);
  const bodyFor = unique === undefined ? () => body : () => Buffer.from(unique());
  const agent = new Agent({
    keepAlive: true,
    maxSockets: config.maxSockets,
    ca: readFileSync(config.caFile),
  });
  if (config.warmupSeconds > 0) await runPhase(config, agent, bodyFor, config.warmupSeconds);
  const window = new CpuWindow(config.serverPid);
  const phase = await runPhase(config, agent, bodyFor, config.durationSeconds);
  const cpu = window.close();
  agent.destroy();
  const out: PacedResult = {
    rate: config.rate,
    achievedRate: (phase.latency.length + phase.failed) / phase.seconds,
    ok: phase.latency.length,
    failed: phase.failed,
    latency: summarize(phase.latency),
    fromSchedule: summarize(phase.fromSchedule),
    sendLag: summarize(phase.sendLag),
    serverCpu: cpu.serverCpu,
    loadCpu: cpu.loadCpu,
    otherCpu: cpu.otherCpu,
  };
  writeFileSync(config.resultFile, JSON.stringify(out));
}

runChild('load-paced', main);
