import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RuntimeBootstrapper, WorkloadsSummary } from '../../../../src/api/runtime-bootstrapper.js';
import { workloadsSummaryOf, MAX_RAN_BEFORE } from '../../../../src/controller/direct/workloads-summary.js';
import {
  planningViews,
  regressionsOf,
  type RegressionInput,
} from '../../../../src/controller/rollout/regression.js';

const at = (
  id: string,
  w: RegressionInput['workloads'],
  o: { current?: string; excluded?: boolean } = {},
): RegressionInput => ({
  id,
  current: o.current ?? 'v2/r1',
  ...(o.excluded ? { excluded: true } : {}),
  workloads: w,
});

describe('regressions: what counts against a rollout (DESIGN §14)', () => {
  test('what a runtime proved itself counts; unproven failures alone count nothing', () => {
    const counts = regressionsOf([
      at('a', { failedPods: 5, regressions: 2, unproven: [{ image: 'k-private', pods: 3 }] }),
      at('b', { failedPods: 0, regressions: 0, ranBefore: ['k-app'] }),
    ]);
    assert.equal(counts.get('a'), 2);
    assert.equal(counts.get('b'), 0);
  });

  test('an unproven failure counts where its original ran under an earlier set on another runtime at that revision', () => {
    const runtimes = [
      at('a', {
        failedPods: 4,
        regressions: 0,
        unproven: [
          { image: 'k-app', pods: 3 },
          { image: 'k-private', pods: 1 },
        ],
      }),
      at('b', { failedPods: 0, ranBefore: ['k-app'] }),
    ];
    assert.equal(regressionsOf(runtimes).get('a'), 3);
  });

  test('its own ranBefore, runtimes at another revision and excluded ones prove nothing', () => {
    const failing = at('a', {
      failedPods: 2,
      unproven: [{ image: 'k-app', pods: 2 }],
      ranBefore: ['k-app', 'k-app'],
    });
    assert.equal(regressionsOf([failing]).get('a'), 0);
    assert.equal(
      regressionsOf([failing, at('old', { failedPods: 0, ranBefore: ['k-app'] }, { current: 'v1/r1' })]).get(
        'a',
      ),
      0,
    );
    assert.equal(
      regressionsOf([failing, at('paused', { failedPods: 0, ranBefore: ['k-app'] }, { excluded: true })]).get(
        'a',
      ),
      0,
    );
  });

  test('never more than the failed Pods the runtime reports; a report without the fields proves none', () => {
    const counts = regressionsOf([
      at('a', { failedPods: 1, regressions: 50, unproven: [{ image: 'k', pods: 9 }] }),
      at('b', { failedPods: 0, ranBefore: ['k'] }),
      at('old-release', { failedPods: 7 }),
      { id: 'none' },
    ]);
    assert.equal(counts.get('a'), 1);
    assert.equal(counts.get('old-release'), 0);
    assert.equal(counts.has('none'), false);
  });

  test('a thousand runtimes without unproven failures cost one pass', () => {
    const many = Array.from({ length: 1_000 }, (_, i) =>
      at(`rt-${i}`, { failedPods: 0, ranBefore: Array.from({ length: 128 }, (_, k) => `k${k}`) }),
    );
    const counts = regressionsOf(many);
    assert.equal(counts.size, 1_000);
  });
});

const rb = (id: string, workloads: WorkloadsSummary | undefined): RuntimeBootstrapper => ({
  metadata: { name: id, namespace: 'kcp-system' },
  spec: { runtimeID: id },
  status: {
    state: 'Ready',
    appliedVersion: 'v2',
    servedVersion: 'v2',
    webhookVersion: 'r1',
    ...(workloads !== undefined ? { workloads } : {}),
  },
});

describe('the planner sees regressions as failedPods', () => {
  test('a forged failure on one runtime is no failure; one whose original ran on another runtime is', () => {
    const summary = (o: Partial<WorkloadsSummary>): WorkloadsSummary => ({
      revision: 'v2',
      pods: 3,
      started: 1,
      failing: 1,
      failedPods: 1,
      samples: [],
      ...o,
    });
    const views = planningViews([
      rb('forged', summary({ regressions: 0, unproven: [{ image: 'k-private', pods: 1 }] })),
      rb('regressed', summary({ regressions: 0, unproven: [{ image: 'k-app', pods: 1 }] })),
      rb('other', summary({ failedPods: 0, failing: 0, regressions: 0, ranBefore: ['k-app'] })),
      rb('no-report', undefined),
    ]);
    const failed = Object.fromEntries(views.map((v) => [v.id, v.workloads?.failedPods]));
    assert.deepEqual(failed, { forged: 0, regressed: 1, other: 0, 'no-report': undefined });
  });
});

describe("a runtime's report in its status", () => {
  test("the applied set's figures, and the originals that ran under its other sets, bounded", () => {
    const ran = Array.from({ length: 200 }, (_, i) => `k${String(i).padStart(3, '0')}`);
    const s = workloadsSummaryOf(
      {
        v2: { pods: 1, started: 0, failing: 1, failedPods: 1, samples: [], regressions: 0, ran: ['mine'] },
        v1: { pods: 5, started: 5, failing: 0, failedPods: 0, samples: [], ran },
      },
      'v2',
    );
    assert.equal(s.revision, 'v2');
    assert.equal(s.failedPods, 1);
    assert.equal(s.regressions, 0);
    assert.equal(s.ranBefore?.length, MAX_RAN_BEFORE);
    assert.ok(!s.ranBefore.includes('mine'));
    assert.ok(!('ran' in s));
    assert.deepEqual(workloadsSummaryOf({}, 'v3'), {
      pods: 0,
      started: 0,
      failing: 0,
      failedPods: 0,
      firstPodAt: undefined,
      samples: [],
      regressions: undefined,
      unproven: undefined,
      ranBefore: undefined,
      revision: 'v3',
    });
  });
});
