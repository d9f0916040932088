import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CTB_HASH_ANNOTATION, RESTART_OPT_OUT_ANNOTATION } from '../../../../src/api/trust-stamp.js';
import {
  paceStep,
  type PaceInput,
  type Rollout,
} from '../../../../src/webhook/trust-restart/restart-pacer.js';
import type { RestartTarget, WorkloadKind } from '../../../../src/webhook/trust-restart/restart-plan.js';
import {
  decideWorkload,
  rolloutComplete,
  type WorkloadObject,
} from '../../../../src/webhook/trust-restart/workload-decision.js';

const HASH = 'a'.repeat(64);
const KINDS: readonly WorkloadKind[] = ['Deployment', 'StatefulSet', 'DaemonSet'];

describe('decideWorkload', () => {
  const workload = (
    own: Record<string, string> = {},
    template: Record<string, string> = {},
    strategy?: string,
  ): WorkloadObject => ({
    metadata: { annotations: own },
    spec: {
      ...(strategy ? { updateStrategy: { type: strategy } } : {}),
      template: { metadata: { annotations: template } },
    },
  });
  const optOut = { [RESTART_OPT_OUT_ANNOTATION]: 'false' };
  for (const kind of KINDS) {
    test(`${kind}: opt-out on the owner or its template wins; the hash on the template means rolling`, () => {
      assert.equal(decideWorkload(kind, workload(), HASH), 'patch');
      assert.equal(decideWorkload(kind, workload({ [CTB_HASH_ANNOTATION]: 'old' }), HASH), 'patch');
      assert.equal(decideWorkload(kind, workload({}, { [CTB_HASH_ANNOTATION]: 'old' }), HASH), 'patch');
      assert.equal(decideWorkload(kind, workload({}, { [CTB_HASH_ANNOTATION]: HASH }), HASH), 'rolling');
      assert.equal(decideWorkload(kind, workload(optOut), HASH), 'opted-out');
      assert.equal(decideWorkload(kind, workload({}, optOut), HASH), 'opted-out');
      assert.equal(
        decideWorkload(kind, workload({}, { [RESTART_OPT_OUT_ANNOTATION]: 'true' }), HASH),
        'patch',
      );
      assert.equal(decideWorkload(kind, workload({}, {}, 'RollingUpdate'), HASH), 'patch');
      assert.equal(
        decideWorkload(kind, workload({}, {}, 'OnDelete'), HASH),
        kind === 'Deployment' ? 'patch' : 'evict',
        'OnDelete: a template change restarts nothing',
      );
    });
  }
});

describe('rolloutComplete', () => {
  const d = (
    generation: number,
    status: NonNullable<WorkloadObject['status']>,
    replicas = 3,
  ): WorkloadObject => ({
    metadata: { generation },
    spec: { replicas },
    status,
  });
  test('Deployment and StatefulSet: observed, all updated and available, no old replica left', () => {
    for (const kind of ['Deployment', 'StatefulSet'] as const) {
      const done = { observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 3 };
      assert.equal(rolloutComplete(kind, d(2, done)), true);
      assert.equal(rolloutComplete(kind, d(3, done)), false, 'generation not observed');
      assert.equal(rolloutComplete(kind, d(2, { ...done, updatedReplicas: 2 })), false);
      assert.equal(rolloutComplete(kind, d(2, { ...done, availableReplicas: 2 })), false);
      assert.equal(rolloutComplete(kind, d(2, { ...done, replicas: 4 })), false, 'an old replica left');
      assert.equal(
        rolloutComplete(kind, d(2, { ...done, replicas: 0, updatedReplicas: 0, availableReplicas: 0 }, 0)),
        true,
      );
    }
    const sts = { observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 3 };
    assert.equal(
      rolloutComplete('StatefulSet', d(2, { ...sts, currentRevision: 'a', updateRevision: 'b' })),
      false,
    );
    assert.equal(
      rolloutComplete('StatefulSet', d(2, { ...sts, currentRevision: 'b', updateRevision: 'b' })),
      true,
    );
  });
  test('DaemonSet: every scheduled Pod updated and available', () => {
    const done = {
      observedGeneration: 1,
      desiredNumberScheduled: 4,
      updatedNumberScheduled: 4,
      numberAvailable: 4,
    };
    assert.equal(rolloutComplete('DaemonSet', d(1, done)), true);
    assert.equal(rolloutComplete('DaemonSet', d(1, { ...done, updatedNumberScheduled: 3 })), false);
    assert.equal(rolloutComplete('DaemonSet', d(1, { ...done, numberAvailable: 3 })), false);
    assert.equal(rolloutComplete('DaemonSet', d(2, done)), false);
  });
});

describe('paceStep', () => {
  const target = (name: string): RestartTarget => ({
    kind: 'workload',
    key: `Deployment/team/${name}`,
    workload: { kind: 'Deployment', namespace: 'team', name },
    pods: [],
  });
  const rollout = (name: string, startedAtMs: number, deadlineAtMs: number): Rollout => ({
    key: `Deployment/team/${name}`,
    target: target(name),
    hash: HASH,
    startedAtMs,
    deadlineAtMs,
  });
  const base: PaceInput = {
    rolling: [],
    completed: new Set(),
    candidates: ['a', 'b', 'c'].map(target),
    settled: new Set(),
    nowMs: 1000,
    notBeforeMs: 0,
    concurrency: 1,
  };
  const keys = (ts: readonly RestartTarget[]): string[] => ts.map((t) => t.key.split('/')[2]!);

  test('nothing starts before the delay after the change', () => {
    const step = paceStep({ ...base, notBeforeMs: 1001 });
    assert.deepEqual(step.queue, []);
    assert.deepEqual(keys(paceStep({ ...base, notBeforeMs: 1000 }).queue), ['a', 'b', 'c']);
  });

  test('at most `concurrency` under way; the next only when one completed or passed its deadline', () => {
    const a = rollout('a', 0, 5000);
    const busy = paceStep({ ...base, rolling: [a] });
    assert.equal(busy.freeSlots, 0);
    assert.deepEqual(busy.queue, []);
    assert.deepEqual(busy.rolling, [a]);

    const done = paceStep({ ...base, rolling: [a], completed: new Set([a.key]) });
    assert.deepEqual(done.finished, [{ rollout: a, outcome: 'completed' }]);
    assert.equal(done.freeSlots, 1);
    assert.deepEqual(keys(done.queue), ['b', 'c'], 'the one just finished is not started again at once');

    const late = paceStep({ ...base, rolling: [a], nowMs: 5000 });
    assert.deepEqual(late.finished, [{ rollout: a, outcome: 'deadline' }]);
    assert.deepEqual(keys(late.queue), ['b', 'c']);

    const two = paceStep({ ...base, rolling: [a], concurrency: 2 });
    assert.equal(two.freeSlots, 1);
    assert.deepEqual(keys(two.queue), ['b', 'c'], 'what is under way is not queued');
  });

  test('settled targets are skipped', () => {
    const step = paceStep({ ...base, settled: new Set([target('b').key]) });
    assert.deepEqual(keys(step.queue), ['a', 'c']);
  });
});
