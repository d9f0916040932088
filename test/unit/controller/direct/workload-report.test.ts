import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import { readReport } from '../../../../src/api/webhook-status.js';
import {
  PREFLIGHT_CONFIG_KEY,
  PREFLIGHT_DOCKER_CONFIG_KEY,
  writePreflight,
  writeWorkloads,
  type PreflightReport,
  type RevisionHealth,
} from '../../../../src/api/workload-health.js';
import {
  needsPreflight,
  preflightCandidateOf,
  preflightSecret,
} from '../../../../src/controller/direct/preflight-candidate.js';
import { StatusBuilder } from '../../../../src/controller/direct/status-builder.js';
import { buildSyncSet, type SyncSet } from '../../../../src/controller/direct/sync-set.js';
import {
  observeWorkloads,
  recordWorkloads,
  WORKLOAD_REST_MS,
  WORKLOAD_SLOW_LOOK_MS,
  WORKLOAD_WATCH_MS,
  workloadLookDue,
} from '../../../../src/controller/direct/webhook-report.js';
import { fleetStatus, formatFleetStatus } from '../../../../src/controller/rollout/fleet-status.js';
import { seedConfigText, syncSources } from '../../../support/fixtures.js';
import { pluck } from '../../../support/pluck.js';

const rb = (status: RuntimeBootstrapper['status'] = {}, generation = 3): RuntimeBootstrapper => ({
  metadata: { name: 'rt-1', namespace: 'kcp-system', generation },
  spec: { runtimeID: 'rt-1' },
  status: { state: 'Ready', appliedVersion: 's2', ...status },
});
const health = (over: Partial<RevisionHealth> = {}): RevisionHealth => ({
  pods: 3,
  started: 2,
  failing: 1,
  failedPods: 1,
  firstPodAt: '2026-01-01T00:00:00Z',
  samples: [
    {
      kind: 'image-pull',
      pod: 'app/web-1',
      image: 'mirror.example/app:1',
      reason: 'ImagePullBackOff',
      at: 't',
    },
  ],
  ...over,
});
const preflight: PreflightReport = {
  version: 's3',
  phase: 'done',
  checked: 4,
  skipped: 0,
  missing: 1,
  refused: 0,
  unreachable: 0,
  samples: [{ image: 'reg.example/app:1', target: 'mirror.example/app:1', result: 'missing' }],
  startedAt: 't0',
  finishedAt: 't1',
};

/** The figures as the status is written (JSON: members left undefined are not written). */
const asWritten = (x: unknown): unknown => JSON.parse(JSON.stringify(x)) as unknown;

describe('the webhook report: workloads and preflight', () => {
  test('readReport parses the workloads and preflight keys; malformed ones are left out', () => {
    const report = readReport({
      data: {
        loadedVersion: 's2',
        workloads: writeWorkloads({ s2: health() }),
        preflight: writePreflight(preflight),
      },
    });
    assert.deepEqual(report.workloads, { s2: health() });
    assert.deepEqual(report.preflight, preflight);
    const bad = readReport({ data: { workloads: '{"s2":{"pods":-1}}', preflight: 'not json' } });
    assert.equal(bad.workloads, undefined);
    assert.equal(bad.preflight, undefined);
  });

  test('failed Pods under the set applied: the figures and Degraded True with the samples', () => {
    const s = new StatusBuilder(rb(), new Date('2026-01-01T00:00:00Z'));
    recordWorkloads(s, { workloads: { s1: health({ failedPods: 7 }), s2: health() }, preflight });
    const out = s.build();
    assert.deepEqual(asWritten(out.workloads), { ...health(), revision: 's2' });
    assert.deepEqual(out.preflight, preflight);
    const c = s.get('Degraded');
    assert.ok(c);
    assert.equal(c.status, 'True');
    assert.equal(c.reason, 'ChangeCausedFailures');
    assert.equal(c.observedGeneration, 3);
    assert.match(
      c.message,
      /1 Pod\(s\) failed under set s2 .*\(1 failing now\): mirror.example\/app:1: ImagePullBackOff/,
    );
  });

  test('no failures: Degraded False; no Pod under the set: False NoPods with zero figures', () => {
    const ok = new StatusBuilder(rb(), new Date());
    recordWorkloads(ok, { workloads: { s2: health({ failing: 0, failedPods: 0, samples: [] }) } });
    assert.equal(ok.get('Degraded')?.status, 'False');
    assert.equal(ok.get('Degraded')?.reason, 'NoFailures');
    const none = new StatusBuilder(rb(), new Date());
    recordWorkloads(none, { workloads: { s1: health() } });
    assert.equal(none.get('Degraded')?.reason, 'NoPods');
    assert.deepEqual(asWritten(none.build().workloads), {
      revision: 's2',
      pods: 0,
      started: 0,
      failing: 0,
      failedPods: 0,
      samples: [],
    });
  });

  test('a report without workloads clears the figures, the condition and the preflight', () => {
    const before = new StatusBuilder(rb(), new Date());
    recordWorkloads(before, { workloads: { s2: health() }, preflight });
    const s = new StatusBuilder(rb(before.build()), new Date());
    recordWorkloads(s, { loadedVersion: 's2' });
    assert.equal(s.build().workloads, undefined);
    assert.equal(s.build().preflight, undefined);
    assert.equal(s.get('Degraded'), undefined);
  });

  test('looks: due at once, then every WORKLOAD_WATCH_MS watched and WORKLOAD_REST_MS at rest', () => {
    assert.equal(workloadLookDue({ watch: false, watchMs: WORKLOAD_WATCH_MS, nowMs: 0 }), true);
    assert.equal(
      workloadLookDue({
        watch: true,
        watchMs: WORKLOAD_WATCH_MS,
        nowMs: WORKLOAD_WATCH_MS - 1,
        lastLookMs: 0,
      }),
      false,
    );
    assert.equal(
      workloadLookDue({ watch: true, watchMs: WORKLOAD_WATCH_MS, nowMs: WORKLOAD_WATCH_MS, lastLookMs: 0 }),
      true,
    );
    assert.equal(
      workloadLookDue({ watch: false, watchMs: WORKLOAD_WATCH_MS, nowMs: WORKLOAD_WATCH_MS, lastLookMs: 0 }),
      false,
    );
    assert.equal(
      workloadLookDue({ watch: false, watchMs: WORKLOAD_WATCH_MS, nowMs: WORKLOAD_REST_MS, lastLookMs: 0 }),
      true,
    );
    // The setting: watched, every watchMs.
    assert.equal(workloadLookDue({ watch: true, watchMs: 1_000, nowMs: 999, lastLookMs: 0 }), false);
    assert.equal(workloadLookDue({ watch: true, watchMs: 1_000, nowMs: 1_000, lastLookMs: 0 }), true);
  });

  test('observeWorkloads reads only when due, survives a failed read, and says when to look again', async () => {
    let reads = 0;
    const read = () => {
      reads++;
      return Promise.resolve({ workloads: { s2: health() } });
    };
    const s = new StatusBuilder(rb(), new Date());
    assert.deepEqual(
      await observeWorkloads(s, read, { watch: true, watchMs: WORKLOAD_WATCH_MS, nowMs: 10, lastLookMs: 5 }),
      {
        looked: false,
        pollAfterMs: WORKLOAD_WATCH_MS,
      },
    );
    assert.equal(reads, 0);
    assert.deepEqual(await observeWorkloads(s, read, { watch: true, watchMs: 2, nowMs: 10, lastLookMs: 5 }), {
      looked: true,
      pollAfterMs: 2,
    });
    reads = 0;
    assert.deepEqual(
      await observeWorkloads(s, read, { watch: false, watchMs: WORKLOAD_WATCH_MS, nowMs: 10 }),
      {
        looked: true,
        pollAfterMs: WORKLOAD_SLOW_LOOK_MS,
      },
    );
    assert.equal(reads, 1);
    assert.equal(s.get('Degraded')?.status, 'True');
    const failed = await observeWorkloads(s, () => Promise.reject(new Error('down')), {
      watch: true,
      watchMs: WORKLOAD_WATCH_MS,
      nowMs: 0,
    });
    assert.equal(failed.looked, false);
    assert.equal(s.get('Degraded')?.status, 'True', 'a failed read leaves the status as it was');
  });
});

describe('the preflight candidate', () => {
  const built = (over: Parameters<typeof syncSources>[0] = {}): SyncSet => {
    const r = buildSyncSet(syncSources(over));
    assert.ok(r.ok);
    return r.set;
  };
  const withConfig = (change: (c: Record<string, unknown>) => void, version: string): SyncSet => {
    const c = JSON.parse(seedConfigText()) as Record<string, unknown>;
    change(c);
    return built({
      version,
      configMap: {
        metadata: { name: 'rt-bootstrapper-config' },
        data: { 'rt-bootstrapper-config.json': JSON.stringify(c) },
      },
    });
  };

  test('needed for new overrides or pull credentials, not for a trust bundle or failOpen', () => {
    const stable = built();
    assert.equal(needsPreflight(stable, undefined), true);
    assert.equal(needsPreflight(built({ version: 'v-2' }), stable), false);
    const overrides = withConfig((c) => {
      c.overrides = { 'docker.io': 'mirror.example' };
    }, 'v-3');
    assert.equal(needsPreflight(overrides, stable), true);
    assert.equal(
      needsPreflight(
        built({
          version: 'v-4',
          pullSecret: {
            metadata: { name: 'kcp-pull' },
            type: 'kubernetes.io/dockerconfigjson',
            data: { '.dockerconfigjson': 'e30K' },
          },
        }),
        stable,
      ),
      true,
    );
    assert.equal(
      needsPreflight(
        withConfig((c) => (c.failOpen = !c.failOpen), 'v-5'),
        stable,
      ),
      false,
    );
  });

  test('needed where the overrideExclusions change (an image no longer excluded moves), not for none vs empty', () => {
    const stable = built();
    const excluding = withConfig((c) => (c.overrideExclusions = ['nginx']), 'v-6');
    assert.equal(needsPreflight(excluding, stable), true);
    assert.equal(needsPreflight(stable, excluding), true);
    assert.equal(
      needsPreflight(
        withConfig((c) => (c.overrideExclusions = ['nginx']), 'v-7'),
        excluding,
      ),
      false,
    );
    assert.equal(
      needsPreflight(
        withConfig((c) => (c.overrideExclusions = []), 'v-8'),
        stable,
      ),
      false,
    );
  });

  test('the Secret holds the config text and the credentials, named by the set version and ours', () => {
    const candidate = preflightCandidateOf(built());
    assert.equal(candidate.version, 'v-1');
    assert.equal(candidate.config, seedConfigText());
    assert.equal(candidate.dockerConfig, 'e30=');
    const secret = preflightSecret(candidate, 'kyma-system');
    const meta = secret.metadata;
    assert.ok(meta);
    assert.equal(meta.name, 'rt-bootstrapper-preflight');
    assert.equal(meta.namespace, 'kyma-system');
    assert.equal(meta.annotations?.['rt-bootstrapper.kyma-project.io/set-version'], 'v-1');
    assert.equal(meta.labels?.['app.kubernetes.io/managed-by'], 'rt-bootstrapper');
    assert.equal(
      Buffer.from(secret.data?.[PREFLIGHT_CONFIG_KEY] ?? '', 'base64').toString(),
      seedConfigText(),
    );
    assert.equal(secret.data?.[PREFLIGHT_DOCKER_CONFIG_KEY], 'e30=');
    const noSecret = preflightSecret({ version: 'v', config: '{}' }, 'kyma-system');
    assert.deepEqual(Object.keys(noSecret.data ?? {}), [PREFLIGHT_CONFIG_KEY]);
  });
});

describe('rtb status: Degraded runtimes and preflight findings', () => {
  test('lists the Degraded runtime with its images and the preflight’s missing images', () => {
    const s = new StatusBuilder(rb(), new Date());
    recordWorkloads(s, { workloads: { s2: health() }, preflight });
    const fine = new StatusBuilder({ ...rb(), spec: { runtimeID: 'rt-2' } }, new Date());
    recordWorkloads(fine, { workloads: { s2: health({ failedPods: 0, failing: 0, samples: [] }) } });
    const f = fleetStatus(
      [
        { ...rb(), status: s.build() },
        {
          ...rb(),
          metadata: { name: 'rt-2', namespace: 'kcp-system' },
          spec: { runtimeID: 'rt-2' },
          status: fine.build(),
        },
      ],
      undefined,
    );
    assert.deepEqual(pluck(f.degraded, 'runtime'), ['rt-1']);
    assert.deepEqual(pluck(f.preflight, 'runtime'), ['rt-1']);
    const text = formatFleetStatus(f);
    const lines = text.split('\n');
    const at = lines.indexOf('Degraded (Pods failing for a reason the change can cause):');
    assert.ok(at >= 0, text);
    assert.equal(lines[at + 1], '  rt-1  set s2: 1 Pod(s) failed, 1 failing now');
    assert.equal(lines[at + 2], '    mirror.example/app:1  ImagePullBackOff  app/web-1');
    const pf = lines.indexOf('Preflight findings:');
    assert.ok(pf >= 0, text);
    assert.equal(lines[pf + 1], '  rt-1  set s3 (done): 1 missing, 0 refused, 0 unreachable of 4 checked');
    assert.equal(lines[pf + 2], '    missing  reg.example/app:1 -> mirror.example/app:1');
    assert.ok(!lines.some((l) => l.startsWith('  rt-2  set')));
  });
});
