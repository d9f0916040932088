import type { V1Pod } from '@kubernetes/client-node';
import { ANNOTATION_DEFAULTED } from '../../src/api/webhook-features.js';
import type { PodClient } from './pod-client.js';
import { sleep } from './processes.js';
import { summarize, type LatencySummary } from './stats.js';

/** One series of Pod creates: where, which Pod, and what the API server must store. */
export interface CreateSeries {
  readonly client: PodClient;
  readonly pod: V1Pod;
  /** Whether the stored Pod carries the `defaulted` mark (some admission mutated it). */
  readonly mutatedExpected: boolean;
  /** Default `default`. */
  readonly namespace?: string | undefined;
  /** Created with this generateName instead of a name of its own, as a ReplicaSet creates Pods. */
  readonly generateName?: string | undefined;
  /** The first container's image the stored Pod must have (the registry rewrite happened). */
  readonly image?: string | undefined;
}

/** `template` under another name. */
export const podNamed = (template: V1Pod, name: string): V1Pod => ({
  ...template,
  metadata: { ...template.metadata, name },
});

const generated = (template: V1Pod, prefix: string): V1Pod => {
  const { name: _name, ...metadata } = template.metadata ?? {};
  return { ...template, metadata: { ...metadata, generateName: prefix } };
};

/** Why a stored Pod is not what its series expects, or undefined. */
function mismatch(s: CreateSeries, stored: V1Pod): string | undefined {
  const isMutated = stored.metadata?.annotations?.[ANNOTATION_DEFAULTED] === 'true';
  if (isMutated !== s.mutatedExpected) return `mutated ${isMutated}, expected ${s.mutatedExpected}`;
  const image = stored.spec?.containers[0]?.image;
  if (s.image !== undefined && image !== s.image) return `image ${image ?? '?'}, expected ${s.image}`;
  return undefined;
}

/**
 * A creator of Pods that interleaves series request by request, the order rotating each round, so
 * every series sees the same noise of a shared machine. Each Pod gets a fresh name (`bench-<n>`);
 * every stored Pod is checked against its series, so a figure never measures an admission that
 * did not happen.
 */
export function interleavedCreates(): (
  count: number,
  series: readonly CreateSeries[],
) => Promise<LatencySummary[]> {
  let serial = 0;
  return async (count, series) => {
    const times = series.map(() => [] as number[]);
    for (let i = 0; i < count; i++) {
      for (let k = 0; k < series.length; k++) {
        const index = (i + k) % series.length;
        const s = series[index]!;
        const body =
          s.generateName === undefined
            ? podNamed(s.pod, `bench-${++serial}`)
            : generated(s.pod, s.generateName);
        const created = await s.client.create(s.namespace ?? 'default', body);
        const wrong = mismatch(s, created.pod);
        if (wrong !== undefined) throw new Error(`Pod ${created.pod.metadata?.name ?? '?'}: ${wrong}`);
        times[index]!.push(created.ms);
      }
    }
    return times.map(summarize);
  };
}

/**
 * Probes with dry-run creates of `series` until the stored Pod is what the series expects: the API
 * server learns of a new webhook registration or admission policy through an informer.
 */
export async function awaitAdmission(series: CreateSeries, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no probe';
  while (Date.now() < deadline) {
    const probe = await series.client.create(
      series.namespace ?? 'default',
      podNamed(series.pod, 'rtb-bench-probe'),
      true,
    );
    const wrong = mismatch(series, probe.pod);
    if (wrong === undefined) return;
    last = wrong;
    await sleep(100);
  }
  throw new Error(`${what} did not take effect within ${timeoutMs} ms (last probe: ${last})`);
}
