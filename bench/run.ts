// Every benchmark, one after the other, then a summary (`npm run bench`). Each benchmark starts
// and stops its own clusters and child processes; a failing one is reported and the next still
// runs. The exit status is 1 if any benchmark failed (a missed target is not a failure: the
// figures are printed, never asserted).
import { cpus } from 'node:os';
import { admissionPathSummary, runAdmissionPaths, type AdmissionPathFigures } from './admission-paths.js';
import { driftSummary, runDriftRepair, type DriftFigures } from './drift-repair.js';
import { podCreateSummary, runPodCreateLatency, type PodCreateFigures } from './pod-create-latency.js';
import { propagationSummary, runPropagation, type PropagationFigures } from './propagation.js';
import { envIntegers, say } from './support/env.js';
import { throughputSummary, runWebhookThroughput, type ThroughputFigures } from './webhook-throughput.js';
import { hostileSummary, runWebhookHostile, type HostileFigures } from './webhook-hostile.js';
import { runTrustRestart, trustRestartSummary, type TrustRestartFigures } from './trust-restart.js';
import { pemParseSummary, runPemParse, type PemFigures } from './pem-parse.js';

async function main(): Promise<void> {
  const started = new Date();
  const failures: string[] = [];
  let throughput: ThroughputFigures | undefined;
  let pods: PodCreateFigures | undefined;
  let admission: AdmissionPathFigures | undefined;
  const propagation: PropagationFigures[] = [];
  let drift: DriftFigures | undefined;
  let hostile: HostileFigures | undefined;
  let restart: TrustRestartFigures | undefined;
  let pem: PemFigures | undefined;
  try {
    throughput = await runWebhookThroughput(say);
  } catch (error) {
    failures.push(
      `webhook-throughput: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  }
  say('');
  try {
    pods = await runPodCreateLatency(say);
  } catch (error) {
    failures.push(
      `pod-create-latency: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  }

  say('');
  try {
    admission = await runAdmissionPaths(say);
  } catch (error) {
    failures.push(
      `admission-paths: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  }

  // BENCH_RUNTIMES lists the numbers of runtimes (default 10; e.g. 10,20).
  for (const n of envIntegers('BENCH_RUNTIMES', [10])) {
    say('');
    try {
      propagation.push(await runPropagation(say, n));
    } catch (error) {
      failures.push(
        `propagation (${n} runtimes): ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
    }
  }
  say('');
  try {
    drift = await runDriftRepair(say);
  } catch (error) {
    failures.push(`drift-repair: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  }

  say('');
  try {
    hostile = await runWebhookHostile(say);
  } catch (error) {
    failures.push(
      `webhook-hostile: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  }

  say('');
  try {
    restart = await runTrustRestart(say);
  } catch (error) {
    failures.push(
      `trust-restart: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  }

  say('');
  try {
    pem = await runPemParse(say);
  } catch (error) {
    failures.push(`pem-parse: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  }

  say('');
  say('== summary ==');
  say(
    `${started.toISOString()}, node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? '?'}), ` +
      `${Math.round((Date.now() - started.getTime()) / 1000)} s`,
  );
  if (throughput) for (const line of throughputSummary(throughput)) say(line);
  if (pods) for (const line of podCreateSummary(pods)) say(line);
  if (admission) for (const line of admissionPathSummary(admission)) say(line);
  for (const p of propagation) for (const line of propagationSummary(p)) say(line);
  if (drift) for (const line of driftSummary(drift)) say(line);
  if (hostile) for (const line of hostileSummary(hostile)) say(line);
  if (restart) for (const line of trustRestartSummary(restart)) say(line);
  if (pem) for (const line of pemParseSummary(pem)) say(line);
  for (const failure of failures) say(`FAILED ${failure}`);
  if (failures.length > 0) process.exitCode = 1;
}

await main();
