import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CTB_HASH_ANNOTATION, RESTART_OPT_OUT_ANNOTATION } from '../../../../src/api/trust-stamp.js';
import {
  admit,
  nextLookMs,
  slotState,
  type AdmitInput,
  type Slot,
} from '../../../../src/runtime-agent/trust-restart/restart-pacer.js';
import type {
  RestartTarget,
  WorkloadKind,
} from '../../../../src/runtime-agent/trust-restart/restart-plan.js';
import {
  decideWorkload,
  rolloutComplete,
  type WorkloadObject,
} from '../../../../src/runtime-agent/trust-restart/workload-decision.js';

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
    test(`${kind}: a workload with no metadata, spec or template is patched`, () => {
      assert.equal(decideWorkload(kind, {}, HASH), 'patch');
      assert.equal(decideWorkload(kind, { metadata: {}, spec: {} }, HASH), 'patch');
      assert.equal(decideWorkload(kind, { spec: { template: {} } }, HASH), 'patch');
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
  test('no replica count means one; a StatefulSet that reports only one revision is judged by its replicas', () => {
    const one = { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1 };
    const noCount: WorkloadObject = { metadata: { generation: 1 }, status: one };
    assert.equal(rolloutComplete('Deployment', noCount), true);
    assert.equal(
      rolloutComplete('Deployment', { ...noCount, status: { ...one, availableReplicas: 0 } }),
      false,
    );
    assert.equal(
      rolloutComplete('Deployment', { ...noCount, status: { ...one, updatedReplicas: 0 } }),
      false,
    );
    assert.equal(rolloutComplete('Deployment', { metadata: { generation: 1 } }), false, 'no status yet');
    assert.equal(
      rolloutComplete('Deployment', { spec: { replicas: 0 } }),
      true,
      'nothing to run, nothing to wait for',
    );
    const sts = { ...one, observedGeneration: 1 };
    assert.equal(
      rolloutComplete('StatefulSet', { ...noCount, status: { ...sts, updateRevision: 'b' } }),
      true,
    );
    assert.equal(
      rolloutComplete('StatefulSet', { ...noCount, status: { ...sts, currentRevision: 'a' } }),
      true,
    );
    assert.equal(
      rolloutComplete('Deployment', {
        ...noCount,
        status: { ...sts, currentRevision: 'a', updateRevision: 'b' },
      }),
      true,
      'revisions are a StatefulSet’s',
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

describe('pacing', () => {
  const target = (name: string): RestartTarget => ({
    kind: 'workload',
    key: `Deployment/team/${name}`,
    workload: { kind: 'Deployment', namespace: 'team', name },
    pods: [],
  });
  const base: AdmitInput = {
    holding: new Set(),
    candidates: ['a', 'b', 'c'].map(target),
    resting: () => false,
    nowMs: 1000,
    notBeforeMs: 0,
    concurrency: 1,
  };
  const keys = (ts: readonly RestartTarget[]): string[] => ts.map((t) => t.key.split('/')[2]!);

  test('nothing starts before the delay after the change', () => {
    assert.deepEqual(admit({ ...base, notBeforeMs: 1001 }), []);
    assert.deepEqual(keys(admit({ ...base, notBeforeMs: 1000 })), ['a']);
  });

  test('at most `concurrency` hold a slot; what holds one or rests is not admitted', () => {
    const a = target('a').key;
    assert.deepEqual(admit({ ...base, holding: new Set([a]) }), []);
    assert.deepEqual(keys(admit({ ...base, holding: new Set([a]), concurrency: 2 })), ['b']);
    assert.deepEqual(keys(admit({ ...base, concurrency: 5 })), ['a', 'b', 'c']);
    assert.deepEqual(keys(admit({ ...base, resting: (k) => k === a })), ['b']);
  });

  test('a started slot ends when its restart completed or its deadline passed; looks come at most every poll', () => {
    const slot: Slot = { key: 'k', target: target('a'), staleUids: new Set(), startedAtMs: 1000 };
    assert.equal(slotState(slot, false, 5999, 5000), 'under-way');
    assert.equal(slotState(slot, true, 2000, 5000), 'completed');
    assert.equal(slotState(slot, false, 6000, 5000), 'deadline');
    assert.equal(nextLookMs(slot, 2000, 5000, 2000), 2000);
    assert.equal(nextLookMs(slot, 5500, 5000, 2000), 500, 'no later than the deadline');
  });
});
