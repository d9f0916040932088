// Issue 26: the plain alternative to attestations, measured in the same run as they are
// (bench/fleet-scale.ts, right after ./attested-resync.ts): the KCP reads the resourceVersion of
// every object in its record of each runtime itself (./metadata-look.ts, in the controller
// process, through its client stack) and compares them with the record. For each way to read
// (`get`: a GET per object; `list`: a LIST per kind and namespace with our label selector):
// - a pass over every runtime at 16 at once, each on a new client (a new TLS context and a full
//   handshake, as after a period's idle): controller CPU per look from the same CPU window as
//   the attestations', requests and new TLS connections per runtime from the child's counters;
// - one runtime at a time, each looked at twice in a row (cold, then warm on the open
//   connection), each look timed with the controller's own CPU clock.
// The record is what the runtime holds now: the objects the attestations' `check` listed, with
// the versions their pool server answers (runtimes share servers, so that is the version a
// runtime of its own would show), read just before.
import { refKey, type AttestedObject, type ManagedRef } from '../../src/api/attestation.js';
import type { ControllerProcess } from './kcp-bench.js';
import type { FleetModeContext } from './fleet-landscape.js';
import { passTraffic } from './fleet-upkeep.js';
import { readRefs } from './fleet-attestations.js';
import { lookGroups, type LookMode, type LookPass, type LookRuntime } from './metadata-look.js';
import { untilQueueIdle } from './queue-progress.js';
import { sleep } from './processes.js';

/** One way of reading, measured. */
export interface LookFigures {
  readonly mode: LookMode;
  /** Requests per runtime per look, as the look counted them and as the controller sent them. */
  readonly requestsPerRuntime: number;
  readonly sentPerRuntime: number;
  readonly tlsPerRuntime: number;
  readonly passS: number;
  /** The concurrent cold pass: controller CPU (window) ÷ runtimes. */
  readonly cpuPerLookMs: number;
  /** One at a time: CPU per cold and per warm look. */
  readonly serialColdMs: number;
  readonly serialWarmMs: number;
  /** Recorded objects found different, and failed requests, over both passes. */
  readonly differing: number;
  readonly failed: number;
}

/** The metadata look's figures. */
export interface MetadataLookFigures {
  readonly runtimes: number;
  readonly objectsPerRuntime: number;
  /** Kinds × namespaces in the record: the LISTs a look needs. */
  readonly listsPerRuntime: number;
  readonly modes: readonly LookFigures[];
}

const CONCURRENCY = 16;

/** Measures both ways of looking over every runtime of the fleet; see the file's head. */
export async function metadataLookCost(
  c: FleetModeContext,
  ctl: ControllerProcess,
  checks: ReadonlyMap<string, readonly ManagedRef[]>,
): Promise<MetadataLookFigures> {
  const { ids, pool, kubeconfigs } = c.fleet;
  const n = ids.length;
  await untilQueueIdle(ctl, 0, 600_000);
  const allRefs = new Map<string, ManagedRef>();
  for (const check of checks.values()) for (const ref of check) allRefs.set(refKey(ref), ref);
  const serverVersions = await Promise.all(pool.map((server) => readRefs(server, [...allRefs.values()])));
  const runtimes: LookRuntime[] = ids.map((id, index) => ({
    id,
    kubeconfig: Buffer.from(kubeconfigs.get(id) ?? '').toString('base64'),
    record: (checks.get(id) ?? []).map((ref): AttestedObject => ({
      ...ref,
      resourceVersion: serverVersions[index % pool.length]?.get(refKey(ref)) ?? '',
    })),
  }));
  const base = `http://127.0.0.1:${ctl.config.port}/metadata-look`;
  const prepared = await fetch(`${base}/prepare`, { method: 'POST', body: JSON.stringify(runtimes) });
  if (!prepared.ok) throw new Error(`the controller refused the looks: ${prepared.status}`);
  const pass = async (query: string): Promise<LookPass> => {
    const r = await fetch(`${base}?${query}`);
    if (!r.ok) throw new Error(`metadata look ${query}: ${r.status} ${await r.text()}`);
    return (await r.json()) as LookPass;
  };

  const first = runtimes[0]?.record ?? [];
  const modes: LookFigures[] = [];
  for (const mode of ['get', 'list'] as const) {
    await sleep(6_000); // the previous pass's connections are gone
    const s0 = await ctl.state();
    const window = c.cpuWindow([ctl.pid]);
    const cold = await pass(`mode=${mode}&concurrency=${CONCURRENCY}`);
    const cpu = window.close();
    const s1 = await ctl.state();
    const serial = await pass(`mode=${mode}&serial=1`);
    const tls =
      Object.values(s1.tlsConnections).reduce((a, b) => a + b, 0) -
      Object.values(s0.tlsConnections).reduce((a, b) => a + b, 0);
    modes.push({
      mode,
      requestsPerRuntime: cold.requests / n,
      sentPerRuntime: passTraffic(s0, s1, n).requestsPerRuntime,
      tlsPerRuntime: tls / n,
      passS: cold.ms / 1000,
      cpuPerLookMs: ((cpu.cores.controller ?? 0) * cpu.seconds * 1000) / n,
      serialColdMs: (serial.serial?.coldCpuMs ?? Number.NaN) / n,
      serialWarmMs: (serial.serial?.warmCpuMs ?? Number.NaN) / n,
      differing: cold.differing + serial.differing,
      failed: cold.failed + serial.failed,
    });
  }
  return {
    runtimes: n,
    objectsPerRuntime: first.length,
    listsPerRuntime: lookGroups(first).size,
    modes,
  };
}

/** Average cores at `n` runtimes for a design costing `msPerRuntime` of CPU per runtime per period. */
export const coresAt = (n: number, msPerRuntime: number, periodS: number): number =>
  (n * msPerRuntime) / 1000 / periodS;
