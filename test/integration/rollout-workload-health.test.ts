import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { V1Secret } from '@kubernetes/client-node';
import { SET_VERSION_ANNOTATION } from '../../src/api/runtime-bootstrapper.js';
import {
  PREFLIGHT_CONFIG_KEY,
  PREFLIGHT_KEY,
  PREFLIGHT_SECRET,
  WORKLOADS_KEY,
  writePreflight,
  writeWorkloads,
  type PreflightReport,
  type RevisionHealth,
  type WorkloadFailureSample,
  type WorkloadHealthReport,
} from '../../src/api/workload-health.js';
import { eventually } from '../../src/envtest/eventually.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { useControlPlane } from '../support/control-plane.js';
import { RolloutFleet, config } from '../support/rollout-fleet.js';

/** rt-1 is the canary. */
const RUNTIMES = ['rt-1', 'rt-2', 'rt-3'] as const;
const REST = ['rt-2', 'rt-3'] as const;
const CANARY = { name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '15s' };
const f = new RolloutFleet(useControlPlane({ clusters: ['kcp', ...RUNTIMES] }));
/** The field manager the test writes the webhook's workload keys under (the webhook plays no part). */
const TEST_MANAGER = 'rtb-test-workloads';
const IMAGE = 'replace.me/library/app:1.0';

/** Plays the runtime's webhook: its status ConfigMap's workloads and preflight keys. */
async function report(
  id: string,
  keys: { workloads?: WorkloadHealthReport; preflight?: PreflightReport },
): Promise<void> {
  const data: Record<string, string> = {};
  if (keys.workloads !== undefined) data[WORKLOADS_KEY] = writeWorkloads(keys.workloads);
  if (keys.preflight !== undefined) data[PREFLIGHT_KEY] = writePreflight(keys.preflight);
  await f.writeStatusKeys(id, data, TEST_MANAGER);
}

/** Pods failing under a revision, as reportFailing reports them. */
interface FailingPods {
  readonly pods: number;
  readonly started: number;
  readonly failing: number;
  readonly sample: Omit<WorkloadFailureSample, 'at'>;
  readonly more?: Partial<RevisionHealth>;
}

/**
 * Plays `id`'s webhook reporting Pods under `revision`, first seen now: `failing` of `pods` fail
 * now (and so far), `sample` the one failure it shows; `more` adds to the revision's figures.
 */
async function reportFailing(id: string, revision: string, o: FailingPods): Promise<void> {
  const now = new Date().toISOString();
  await report(id, {
    workloads: {
      [revision]: {
        pods: o.pods,
        started: o.started,
        failing: o.failing,
        failedPods: o.failing,
        firstPodAt: now,
        samples: [{ ...o.sample, at: now }],
        ...o.more,
      },
    },
  });
}

/** A new pull Secret's set after `stable`, once the canary serves it and reports `failing` under it. */
async function canaryFailingUnder(auth: string, stable: string, failing: FailingPods): Promise<string> {
  const target = await f.newPullSecretSet(auth, stable);
  await f.waitServed('rt-1', target);
  await reportFailing('rt-1', target, failing);
  return target;
}

/** A config whose overrides send `replace.me` to `mirror`. */
const mirrored = (mirror: string): string =>
  config((c) => {
    (c as unknown as { overrides: Record<string, string> }).overrides = { 'replace.me': mirror };
  });

const preflightOf = (version: string, missing: number): PreflightReport => ({
  version,
  phase: 'done',
  checked: 2,
  skipped: 0,
  missing,
  refused: 0,
  unreachable: 0,
  samples:
    missing > 0
      ? [{ image: IMAGE, target: IMAGE.replace('replace.me', 'mirror-bad.example'), result: 'missing' }]
      : [],
  startedAt: new Date().toISOString(),
  finishedAt: new Date().toISOString(),
});

const readPreflightSecret = async (id: string): Promise<V1Secret | undefined> => {
  try {
    return await kubeRequest<V1Secret>(f.rt(id).kubeConfig(), {
      method: 'GET',
      path: `/api/v1/namespaces/kyma-system/secrets/${PREFLIGHT_SECRET}`,
    });
  } catch (error) {
    if (statusCodeOf(error) === 404) return undefined;
    throw error;
  }
};

/** The set version of the rollout's stable revision (the sources may hold a halted one). */
const stableSet = async (): Promise<string> =>
  ((await f.readPolicy()).status?.stable ?? '').split('/')[0] ?? '';

describe('rollouts that see the workloads: preflight and Pods failing under the target', () => {
  f.useFleet(
    RUNTIMES,
    {
      waves: [CANARY],
      failureThreshold: 0,
      healthDeadline: '60s',
      workloads: { toleratedFailures: 0, observeFor: '2s', preflight: true },
    },
    async () => {
      await f.start();
      for (const id of RUNTIMES) {
        // A webhook that follows Pods reports workloads from the start (none yet).
        await kubeRequest(f.rt(id).kubeConfig(), {
          method: 'POST',
          path: '/api/v1/namespaces',
          body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kyma-system' } },
        });
        await report(id, { workloads: {} });
        await f.install(id);
      }
      const version = f.sources.snapshot().version;
      for (const id of RUNTIMES) await f.waitServed(id, version);
      await f.waitPhase('Complete');
    },
  );

  test('the report is read without a change: the figures and Degraded False (no Pods) per runtime', async () => {
    const rb = await eventually(async () => {
      const r = await f.readRb('rt-1');
      return r.status?.workloads !== undefined ? r : undefined;
    }, 30_000);
    assert.equal(rb.status?.workloads?.revision, rb.status?.appliedVersion);
    const degraded = rb.status?.conditions?.find((c) => c.type === 'Degraded');
    assert.ok(degraded);
    assert.equal(degraded.status, 'False');
    assert.equal(degraded.reason, 'NoPods');
  });

  test('a mirror that lacks an image: the canary’s preflight halts before anyone gets the set, naming the image', async () => {
    const stable = f.sources.snapshot().version;
    const t = f.trace(RUNTIMES);
    await f.putConfig(mirrored('mirror-bad.example'));
    const bad = await f.nextVersion(stable);
    await f.waitPhase('Preflight');
    // The candidate reaches the canary only, as a Secret.
    const secret = await eventually(
      () => readPreflightSecret('rt-1'),
      30_000,
      'the preflight Secret on rt-1',
    );
    assert.equal(secret.metadata?.annotations?.[SET_VERSION_ANNOTATION], bad);
    assert.match(
      Buffer.from(secret.data?.[PREFLIGHT_CONFIG_KEY] ?? '', 'base64').toString(),
      /mirror-bad\.example/,
    );
    for (const id of REST) assert.equal(await readPreflightSecret(id), undefined, id);
    await report('rt-1', { workloads: {}, preflight: preflightOf(bad, 1) });
    const halted = await f.waitPhase('Halted');
    assert.match(
      halted.status?.haltReason ?? '',
      /preflight failed .*rt-1: .*missing replace\.me\/library\/app:1\.0 at mirror-bad\.example/,
    );
    const samples = await t.stop();
    for (const s of samples)
      for (const id of RUNTIMES) assert.equal(s[id]?.applied, stable, `${id} got the set`);
    // The candidate is taken away again.
    await eventually(
      async () => ((await readPreflightSecret('rt-1')) === undefined ? true : undefined),
      30_000,
    );
    const text = await f.statusText();
    assert.match(text, /Preflight findings:/);
    assert.match(text, /missing {2}replace\.me\/library\/app:1\.0 -> mirror-bad\.example\/library\/app:1\.0/);
  });

  test('a good preflight starts wave 0; a runtime with no Pod under it is pending until the soak ends, then healthy', async () => {
    const halted = f.sources.snapshot().version;
    const stable = await stableSet();
    await f.putConfig(mirrored('mirror-good.example'));
    const good = await f.nextVersion(halted);
    await f.waitPhase('Preflight');
    await eventually(() => readPreflightSecret('rt-1'), 30_000, 'the preflight Secret on rt-1');
    await report('rt-1', { workloads: {}, preflight: preflightOf(good, 0) });
    await f.waitServed('rt-1', good);
    for (const id of REST) assert.equal((await f.readRb(id)).status?.appliedVersion, stable, id);
    // Soaking: rt-1 reported no Pod under the set, and the status says it counts healthy at the soak's end.
    await eventually(
      async () => {
        const p = (await f.readPolicy()).status;
        return p?.phase === 'Soaking' && /no Pod under the revision .*rt-1/.test(p.message ?? '')
          ? true
          : undefined;
      },
      30_000,
      'the soak message naming rt-1 without Pods',
    );
    for (const id of RUNTIMES) await f.waitServed(id, good, 60_000);
    await f.waitPhase('Complete');
    assert.equal(await readPreflightSecret('rt-1'), undefined, 'the candidate is gone');
  });

  test("a namespace user's forged Pods failing on the canary halt nothing: failures that are no regression", async () => {
    await f.patchPolicy({ workloads: { toleratedFailures: 0, observeFor: '2s', preflight: false } });
    const stable = await stableSet();
    // What the webhook reports of Pods whose image never ran under an earlier set anywhere.
    const target = await canaryFailingUnder('v8', stable, {
      pods: 3,
      started: 0,
      failing: 3,
      sample: {
        kind: 'image-pull',
        pod: 'tenant/private-0',
        image: 'mirror.example/someone/private:1',
        reason: 'ErrImagePull',
      },
      more: { regressions: 0, unproven: [{ image: '0123456789abcdef', pods: 3 }], ran: [] },
    });
    for (const id of RUNTIMES) await f.waitServed(id, target, 120_000);
    await f.waitPhase('Complete', 60_000);
    const rb = await f.readRb('rt-1');
    assert.equal(rb.status?.workloads?.failedPods, 3, 'the failures are shown');
    assert.equal(rb.status.workloads.regressions, 0, 'and none of them is a regression');
  });

  test('Pods failing under the target on the canary halt the rollout within the soak and roll back', async () => {
    await f.patchPolicy({ workloads: { toleratedFailures: 0, observeFor: '2s', preflight: false } });
    const stable = await stableSet();
    assert.equal(stable, f.sources.snapshot().version, 'the last rollout completed');
    const t = f.trace(RUNTIMES);
    await canaryFailingUnder('v9', stable, {
      pods: 2,
      started: 1,
      failing: 1,
      sample: {
        kind: 'image-pull',
        pod: 'apps/web-0',
        image: 'ghcr.io/library/app:1.0',
        reason: 'ImagePullBackOff',
      },
      // Its original ran under the stable set on this runtime: a regression.
      more: { regressions: 1 },
    });
    const halted = await f.waitPhase('Halted', 30_000);
    assert.match(
      halted.status?.haltReason ?? '',
      /rt-1: 1 Pod\(s\) failed under set .*ghcr\.io\/library\/app:1\.0: ImagePullBackOff/,
    );
    assert.deepEqual(
      halted.status?.failures?.map((x) => x.runtime),
      ['rt-1'],
    );
    await f.waitServed('rt-1', stable);
    const samples = await t.stop();
    for (const s of samples)
      for (const id of REST) assert.equal(s[id]?.applied, stable, `${id} got the target`);
    const fleet = await f.statusJson();
    assert.match(fleet.rollout?.failures[0]?.reason ?? '', /ghcr\.io\/library\/app:1\.0: ImagePullBackOff/);
    const text = await f.statusText();
    assert.match(text, /failed in the rollout: rt-1: .*ghcr\.io\/library\/app:1\.0/);
  });

  test('rtb status shows a Degraded runtime with the image (read with or without a change)', async () => {
    const applied = (await f.readRb('rt-2')).status?.appliedVersion ?? '';
    await reportFailing('rt-2', applied, {
      pods: 1,
      started: 0,
      failing: 1,
      sample: {
        kind: 'pull-secret-missing',
        pod: 'apps/api-0',
        image: 'ghcr.io/library/api:2',
        reason: 'PullSecretMissing',
      },
    });
    // Not watched (no wave under way): the next look after the rest bound, on a pass made anyway.
    await f.start();
    const fleet = await eventually(async () => {
      const s = await f.statusJson();
      return s.degraded.some((d) => d.runtime === 'rt-2') ? s : undefined;
    }, 60_000);
    assert.equal(
      fleet.degraded.find((d) => d.runtime === 'rt-2')?.samples[0]?.image,
      'ghcr.io/library/api:2',
    );
    const text = await f.statusText();
    assert.match(
      text,
      /rt-2 {2}set \S+: 1 Pod\(s\) failed, 1 failing now\n {4}ghcr\.io\/library\/api:2 {2}PullSecretMissing/,
    );
    const c = (await f.readRb('rt-2')).status?.conditions?.find((x) => x.type === 'Degraded');
    assert.ok(c);
    assert.equal(c.status, 'True');
    assert.match(c.message, /ghcr\.io\/library\/api:2: PullSecretMissing/);
  });
});
