// The phase of bench/webhook-hostile.ts that goes through the real API server: Pods created at a
// fixed rate while connections of one hostile shape (or none, the baseline) hold the webhook's
// port; counts the creates the webhook answered with its mutation.
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { HOSTILE_SHAPES, startHostileCrowd, type HostileShape } from '../../test/support/hostile-clients.js';
import { memoryKib, resetPeakMemory } from './proc.js';
import { sleep } from './processes.js';
import { mb, summarize, type LatencySummary } from './stats.js';

const FIPS = 'rt-cfg.kyma-project.io/set-fips-mode';
const DEFAULTED = 'rt-bootstrapper.kyma-project.io/defaulted';

/** One phase: the shape held open (none for the baseline) and what the API server's calls got. */
export interface ApiServerPhase {
  /** `baseline`, one shape, or `all` (every shape at once). */
  readonly name: 'baseline' | HostileShape | 'all';
  readonly connections: number;
  /** Hostile connections opened over the phase, renewals included. */
  readonly opened: number;
  readonly creates: number;
  /** Stored with the webhook's mutation (so answered within the registration's timeout). */
  readonly mutated: number;
  /** Creates that failed (the API server answered an error). */
  readonly failed: number;
  readonly latency: LatencySummary;
  readonly peakKib: number;
}

/** What a run of the phase needs. */
export interface ApiServerPhaseOptions {
  readonly kc: KubeConfig;
  readonly webhookPid: number;
  readonly webhookPort: number;
  readonly perShape: number;
  readonly seconds: number;
  /** Pod creates a second. */
  readonly rate: number;
}

/** Runs the baseline, each shape alone, then every shape at once. */
export async function runApiServerPhases(
  o: ApiServerPhaseOptions,
  say: (line: string) => void,
): Promise<ApiServerPhase[]> {
  const phases: ApiServerPhase[] = [];
  const names: ApiServerPhase['name'][] = ['baseline', ...HOSTILE_SHAPES, 'all'];
  for (const name of names) {
    const phase = await runPhase(name, o);
    say(describePhase(phase));
    phases.push(phase);
  }
  return phases;
}

async function runPhase(name: ApiServerPhase['name'], o: ApiServerPhaseOptions): Promise<ApiServerPhase> {
  const core = o.kc.makeApiClient(CoreV1Api);
  const shapes = name === 'baseline' ? [] : name === 'all' ? HOSTILE_SHAPES : [name];
  const crowds = shapes.map((shape) => startHostileCrowd(shape, o.perShape, { port: o.webhookPort }));
  const resettable = resetPeakMemory(o.webhookPid);
  let sampled = memoryKib(o.webhookPid).rss;
  const sampler = setInterval(() => {
    sampled = Math.max(sampled, memoryKib(o.webhookPid).rss);
  }, 25);
  try {
    // The crowd settles in (handshakes, headers) before the first call.
    await sleep(shapes.length > 0 ? 2_000 : 0);
    const latencies: number[] = [];
    let mutated = 0;
    let failed = 0;
    const creates: Promise<void>[] = [];
    const total = Math.round(o.seconds * o.rate);
    const started = Date.now();
    for (let i = 0; i < total; i++) {
      const due = started + (i * 1000) / o.rate;
      await sleep(Math.max(0, due - Date.now()));
      const body: V1Pod = {
        metadata: { name: `${name}-${String(i)}`, annotations: { [FIPS]: 'true' } },
        spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }] },
      };
      const t0 = performance.now();
      creates.push(
        core.createNamespacedPod({ namespace: 'default', body }).then(
          (stored) => {
            latencies.push(performance.now() - t0);
            if (stored.metadata?.annotations?.[DEFAULTED] === 'true') mutated++;
          },
          () => {
            latencies.push(performance.now() - t0);
            failed++;
          },
        ),
      );
    }
    await Promise.all(creates);
    return {
      name,
      connections: shapes.length * o.perShape,
      opened: crowds.reduce((n, c) => n + c.opened(), 0),
      creates: total,
      mutated,
      failed,
      latency: summarize(latencies),
      peakKib: resettable ? Math.max(sampled, memoryKib(o.webhookPid).peak) : sampled,
    };
  } finally {
    clearInterval(sampler);
    for (const c of crowds) c.stop();
    await core.deleteCollectionNamespacedPod({ namespace: 'default' }).catch(() => undefined);
  }
}

/** The share of calls answered with the mutation. */
export function mutatedShare(p: ApiServerPhase): number {
  return p.creates === 0 ? 0 : p.mutated / p.creates;
}

function describePhase(p: ApiServerPhase): string {
  return (
    `  ${p.name.padEnd(15)} ${String(p.connections).padStart(5)} hostile (${String(p.opened)} opened): ` +
    `${String(p.mutated)} / ${String(p.creates)} mutated (${(mutatedShare(p) * 100).toFixed(1)} %), ` +
    `${String(p.failed)} failed; create p50 ${p.latency.p50.toFixed(0)} ms, p99 ${p.latency.p99.toFixed(0)} ms, ` +
    `max ${p.latency.max.toFixed(0)} ms; peak VmRSS ${mb(p.peakKib)}`
  );
}
