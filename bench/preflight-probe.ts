// Preflight duration for 200 images (issue 27): how long the preflight takes to plan and check
// 200 distinct images against the local landscape's registries (Debian's docker-registry on
// loopback, behind htpasswd as the landscape's mirror is, then open), next to 200 bare manifest
// HEADs with the same concurrency. Behind htpasswd, the registry checks a bcrypt hash on every
// request, which is most of what both figures cost there.
//
//   npx tsx bench/preflight-probe.ts
//
// The preflight run starts from nothing, as a new candidate does: a fresh probe (the registry's
// 401 challenge learned on the first images), the plan from 200 Pods, then the check with the
// default concurrency (8). The same-run baseline is 200 HEADs on the same URLs with the Basic
// header already set, over one keep-alive agent of 8 sockets: what the registry's answers alone
// cost. Median of BENCH_PREFLIGHT_RUNS runs (default 7) each; BENCH_PREFLIGHT_IMAGES changes the
// count. The figures are printed, never asserted.
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FEATURE_ALTER_IMG_REGISTRY } from '../src/api/webhook-features.js';
import { LocalRegistry } from '../src/envtest/local-registry.js';
import {
  checkImages,
  DEFAULT_PREFLIGHT_CONCURRENCY,
} from '../src/runtime-agent/preflight/preflight-check.js';
import {
  planPreflight,
  type PlanPod,
  type PreflightPlanInput,
} from '../src/runtime-agent/preflight/preflight-plan.js';
import { MANIFEST_ACCEPT, RegistryProbe } from '../src/runtime-agent/preflight/registry-probe.js';
import { pushTinyImage } from '../test/support/registry-push.js';
import { envNumber, isMain, say as print } from './support/env.js';
import { median } from './support/stats.js';

/** One registry's figures, milliseconds. */
export interface PreflightFigures {
  /** `secured` (htpasswd, as the landscape's mirror) or `open`. */
  readonly registry: string;
  readonly images: number;
  readonly concurrency: number;
  readonly preflightMs: number;
  readonly bareHeadsMs: number;
  readonly allOk: boolean;
}

const SOURCE = 'src.example.com';

async function bareHeads(
  urls: readonly string[],
  authorization: string | undefined,
  concurrency: number,
): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  let failures = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < urls.length; i = next++) {
      const url = urls[i];
      if (url === undefined) return;
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(
          url,
          {
            method: 'HEAD',
            agent,
            headers: { ...(authorization ? { authorization } : {}), accept: MANIFEST_ACCEPT },
          },
          (res) => {
            res.resume();
            res.on('end', () => {
              resolve(res.statusCode ?? 0);
            });
          },
        );
        req.on('error', reject);
        req.end();
      });
      if (status !== 200) failures++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const ms = performance.now() - started;
  agent.destroy();
  if (failures > 0) throw new Error(`${failures} bare HEADs did not answer 200`);
  return ms;
}

async function measure(
  kind: 'secured' | 'open',
  images: number,
  runs: number,
  say: (line: string) => void,
): Promise<PreflightFigures> {
  const concurrency = DEFAULT_PREFLIGHT_CONCURRENCY;
  const dir = await mkdtemp(join(tmpdir(), 'rtb-bench-preflight-'));
  const credentials = kind === 'secured' ? { username: 'rtb', password: 'bench-Pa55word' } : undefined;
  const registry = await LocalRegistry.start({ dir, ...(credentials ? { credentials } : {}) });
  try {
    say(`preflight (${kind} registry): pushing ${images} images to ${registry.host}`);
    const repositories = Array.from({ length: images }, (_, i) => `team/app${String(i).padStart(4, '0')}`);
    for (let i = 0; i < repositories.length; i += 16)
      await Promise.all(
        repositories.slice(i, i + 16).map((r) => pushTinyImage(registry, `mirror/${r}`, '1.0')),
      );

    // Pods that ask for the images at their source, in a namespace the candidate opts in.
    const pods: PlanPod[] = repositories.map((r) => ({
      metadata: { namespace: 'apps' },
      spec: { containers: [{ name: 'c', image: `${SOURCE}/${r}:1.0` }] },
    }));
    const config: PreflightPlanInput['config'] = {
      overrides: { [SOURCE]: `${registry.host}/mirror` },
      availableFeatures: [FEATURE_ALTER_IMG_REGISTRY],
      namespaceFeatures: { apps: [FEATURE_ALTER_IMG_REGISTRY] },
    };
    const urls = repositories.map((r) => `http://${registry.host}/v2/mirror/${r}/manifests/1.0`);
    const authorization = credentials
      ? `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`
      : undefined;

    const preflight: number[] = [];
    const bare: number[] = [];
    let allOk = true;
    // One warm-up of each, not counted (the registry's first reads of its storage).
    for (let run = -1; run < runs; run++) {
      const started = performance.now();
      const plan = planPreflight({ pods, namespaces: [], config });
      const probe = new RegistryProbe({
        servers: { [registry.host]: `http://${registry.host}` },
        ...(credentials ? { dockerConfigJson: registry.dockerConfigJson() } : {}),
      });
      const result = await checkImages(plan.images, probe, { concurrency });
      probe.close();
      const ms = performance.now() - started;
      allOk &&= result.checked.length === images && result.checked.every((c) => c.outcome.result === 'ok');
      const bareMs = await bareHeads(urls, authorization, concurrency);
      if (run >= 0) {
        preflight.push(ms);
        bare.push(bareMs);
      }
    }
    const figures = {
      registry: kind,
      images,
      concurrency,
      preflightMs: median(preflight),
      bareHeadsMs: median(bare),
      allOk,
    };
    say(
      `preflight (${kind} registry): ${images} images, concurrency ${concurrency}, median of ${runs}: ` +
        `plan + check ${figures.preflightMs.toFixed(1)} ms, ${images} bare HEADs ${figures.bareHeadsMs.toFixed(1)} ms` +
        ` (x${(figures.preflightMs / figures.bareHeadsMs).toFixed(2)}); every image ok: ${allOk}`,
    );
    return figures;
  } finally {
    await registry.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Runs the benchmark against a secured and an open registry; `say` prints a line. */
export async function runPreflightProbe(say: (line: string) => void = print): Promise<PreflightFigures[]> {
  const images = envNumber('BENCH_PREFLIGHT_IMAGES', 200);
  const runs = envNumber('BENCH_PREFLIGHT_RUNS', 7);
  return [await measure('secured', images, runs, say), await measure('open', images, runs, say)];
}

if (isMain(import.meta.url)) {
  runPreflightProbe().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
