import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  MAX_FAILURE_SAMPLES,
  MAX_RAN_ORIGINALS,
  MAX_UNPROVEN_ORIGINALS,
  readWorkloads,
  writeWorkloads,
  type RevisionHealth,
} from '../../../../src/api/workload-health.js';
import type { WorkloadFailure } from '../../../../src/runtime-agent/workload-health/pod-health.js';
import {
  RevisionTally,
  type PodObservation,
} from '../../../../src/runtime-agent/workload-health/revision-tally.js';

const T0 = Date.parse('2026-11-27T10:00:00Z');
let clock = T0;
const now = () => new Date(clock);
const tally = () => new RevisionTally({ now });

const pull = (image = 'mirror.example.com/app:1', container = 'app'): WorkloadFailure => ({
  kind: 'image-pull',
  container,
  image,
  registry: image.slice(0, image.indexOf('/')),
  reason: 'ImagePullBackOff',
  message: 'not found',
});
const secretMissing: WorkloadFailure = {
  kind: 'pull-secret-missing',
  container: 'app',
  reason: 'PullSecretMissing',
};
const mount: WorkloadFailure = {
  kind: 'mount',
  container: 'app',
  reason: 'CreateContainerError',
  message: 'x',
};

const obs = (uid: string, o: Partial<PodObservation> = {}): PodObservation => ({
  uid,
  pod: `ns/${uid}`,
  revision: 'v1',
  createdAt: new Date(T0).toISOString(),
  started: false,
  failures: [],
  ...o,
});

/** A revision's report with these counts, first seen at T0, no samples, regressions or runs. */
const counts = (pods: number, started: number, failing: number, failedPods: number): RevisionHealth => ({
  pods,
  started,
  failing,
  failedPods,
  firstPodAt: new Date(T0).toISOString(),
  samples: [],
  regressions: 0,
  unproven: [],
  ran: [],
});

describe('revision tally: counts', () => {
  test('pods, started and failing follow the Pods', () => {
    const t = tally();
    t.upsert(obs('a'));
    t.upsert(obs('b', { started: true }));
    t.upsert(obs('c', { failures: [pull()] }));
    assert.deepEqual({ ...t.report().v1, samples: [] }, counts(3, 1, 1, 1));
    t.upsert(obs('a', { started: true }));
    t.upsert(obs('c', { started: true }));
    const r = t.report().v1;
    assert.equal(r?.started, 3);
    assert.equal(r.failing, 0, 'c recovered');
    assert.equal(r.failedPods, 1, 'but it failed once');
    assert.equal(t.size, 3);
  });

  test('an unchanged upsert changes nothing; a repeated failure counts once', () => {
    const t = tally();
    assert.deepEqual(t.upsert(obs('a', { failures: [pull()] })), ['image-pull']);
    const before = t.report();
    assert.deepEqual(t.upsert(obs('a', { failures: [pull()] })), [], 'already failing');
    assert.deepEqual(t.report(), before);
    t.upsert(obs('a'));
    assert.deepEqual(
      t.upsert(obs('a', { failures: [pull(), mount] })),
      ['image-pull', 'mount'],
      'fails again',
    );
    assert.equal(t.report().v1?.failedPods, 1, 'the same Pod');
  });

  test('a deleted Pod leaves pods, started and failing but stays in failedPods', () => {
    const t = tally();
    t.upsert(obs('a', { started: true }));
    t.upsert(obs('b', { failures: [pull()] }));
    t.delete('b');
    t.delete('a');
    t.delete('a');
    t.delete('never-seen');
    assert.deepEqual({ ...t.report().v1, samples: [] }, counts(0, 0, 0, 1));
    assert.equal(t.size, 0);
    t.upsert(obs('c', { failures: [pull()] }));
    assert.equal(t.report().v1?.failedPods, 2);
  });

  test('a Pod whose revision changes moves, its failure staying with the old revision', () => {
    const t = tally();
    t.upsert(obs('a', { failures: [pull()], started: true }));
    t.upsert(obs('a', { revision: 'v2', started: true }));
    const r = t.report();
    assert.equal(r.v1?.pods, 0);
    assert.equal(r.v1.failedPods, 1);
    assert.equal(r.v2?.pods, 1);
    assert.equal(r.v2.started, 1);
    assert.equal(r.v2.failedPods, 0);
  });

  test('firstPodAt is the earliest creation seen; without one, when it was seen', () => {
    const t = tally();
    t.upsert(obs('a', { createdAt: '2026-11-27T10:05:00Z' }));
    t.upsert(obs('b', { createdAt: '2026-11-27T10:01:00Z' }));
    t.upsert(obs('c', { createdAt: '2026-11-27T10:09:00Z' }));
    assert.equal(t.report().v1?.firstPodAt, '2026-11-27T10:01:00.000Z');
    clock = T0 + 60_000;
    t.upsert(obs('d', { revision: 'v2', createdAt: undefined }));
    t.upsert(obs('e', { revision: 'v3', createdAt: 'garbage' }));
    assert.equal(t.report().v2?.firstPodAt, '2026-11-27T10:01:00.000Z');
    assert.equal(t.report().v3?.firstPodAt, '2026-11-27T10:01:00.000Z');
    clock = T0;
  });
});

describe('revision tally: samples', () => {
  test('samples carry the Pod, the failure and when it was first seen', () => {
    const t = tally();
    t.upsert(obs('a', { failures: [pull()] }));
    assert.deepEqual(t.report().v1?.samples, [{ ...pull(), pod: 'ns/a', at: new Date(T0).toISOString() }]);
  });

  test('at most five, the first distinct ones, stable as Pods come and go', () => {
    const t = tally();
    for (let i = 0; i < 20; i++) t.upsert(obs(`same-${i}`, { failures: [pull()] }));
    assert.equal(t.report().v1?.samples.length, 1, 'one image, one reason: one sample');
    for (let i = 0; i < 20; i++) t.upsert(obs(`p${i}`, { failures: [pull(`r${i}.io/x:1`)] }));
    const first = t.report().v1?.samples;
    assert.equal(first?.length, MAX_FAILURE_SAMPLES);
    assert.deepEqual(
      first.map((s) => s.image),
      ['mirror.example.com/app:1', 'r0.io/x:1', 'r1.io/x:1', 'r2.io/x:1', 'r3.io/x:1'],
    );
    for (let i = 0; i < 20; i++) t.delete(`p${i}`);
    t.upsert(obs('late', { failures: [mount] }));
    assert.deepEqual(t.report().v1?.samples, first, 'no churn');
  });

  test('a missing Secret is one sample per namespace; mount and pull of one image are two', () => {
    const t = tally();
    t.upsert(obs('a', { pod: 'n1/a', failures: [secretMissing] }));
    t.upsert(obs('b', { pod: 'n1/b', failures: [secretMissing] }));
    t.upsert(obs('c', { pod: 'n2/c', failures: [secretMissing] }));
    t.upsert(obs('d', { failures: [{ ...mount, image: 'mirror.example.com/app:1' }, pull()] }));
    assert.deepEqual(
      t.report().v1?.samples.map((s) => `${s.kind} ${s.pod}`),
      ['pull-secret-missing n1/a', 'pull-secret-missing n2/c', 'mount ns/d', 'image-pull ns/d'],
    );
  });

  test('Pod names longer than the report allows are cut', () => {
    const t = tally();
    t.upsert(obs('a', { pod: `ns/${'x'.repeat(400)}`, failures: [pull()] }));
    assert.equal(t.report().v1?.samples[0]?.pod.length, 320);
  });
});

describe('revision tally: bounds', () => {
  test('five revisions reported, newest by first Pod; old ones without Pods are forgotten', () => {
    const t = tally();
    for (let i = 0; i < 8; i++) {
      t.upsert(obs(`p${i}`, { revision: `v${i}`, createdAt: new Date(T0 + i * 60_000).toISOString() }));
      t.delete(`p${i}`);
    }
    assert.deepEqual(Object.keys(t.report()), ['v7', 'v6', 'v5', 'v4', 'v3']);
    assert.equal(t.revisionCount, 5);
  });

  test('a revision with Pods is kept (counts stay right) but only the newest five are reported', () => {
    const t = tally();
    t.upsert(obs('old', { revision: 'v0', createdAt: new Date(T0 - 3_600_000).toISOString() }));
    for (let i = 1; i < 8; i++)
      t.upsert(obs(`p${i}`, { revision: `v${i}`, createdAt: new Date(T0 + i * 60_000).toISOString() }));
    assert.equal(t.revisionCount, 8);
    assert.ok(!('v0' in t.report()));
    t.delete('old');
    assert.equal(t.revisionCount, 7, 'v0 is gone once its last Pod is');
    t.upsert(obs('old2', { revision: 'v0', createdAt: new Date(T0 - 3_600_000).toISOString() }));
    t.upsert(
      obs('old2', { revision: 'v0', createdAt: new Date(T0 - 3_600_000).toISOString(), started: true }),
    );
    t.delete('old2');
    for (let i = 1; i < 8; i++) t.delete(`p${i}`);
    assert.equal(t.revisionCount, 5);
  });

  test('a Pod of an old revision appearing late is counted, not dropped on arrival', () => {
    const t = tally();
    for (let i = 1; i <= 5; i++) {
      t.upsert(obs(`p${i}`, { revision: `v${i}`, createdAt: new Date(T0 + i * 60_000).toISOString() }));
      t.delete(`p${i}`);
    }
    t.upsert(obs('late', { revision: 'v0', createdAt: new Date(T0).toISOString(), failures: [pull()] }));
    t.upsert(obs('late2', { revision: 'v0', createdAt: new Date(T0).toISOString() }));
    t.delete('late');
    t.delete('late2');
    assert.equal(t.revisionCount, 5);
  });

  test('the report reads back through the ConfigMap contract', () => {
    const t = tally();
    for (let i = 0; i < 9; i++)
      t.upsert(
        obs(`p${i}`, { revision: `v${i}`, createdAt: new Date(T0 + i).toISOString(), failures: [pull()] }),
      );
    const r = t.report();
    assert.deepEqual(readWorkloads(writeWorkloads(r)), r);
  });

  test('memory: the per-Pod record is small and nothing grows with deleted Pods', () => {
    const t = tally();
    for (let i = 0; i < 10_000; i++)
      t.upsert(
        obs(`uid-${i}`, { revision: `v${i % 3}`, failures: i % 10 === 0 ? [pull(`r${i}.io/x:1`)] : [] }),
      );
    assert.equal(t.size, 10_000);
    for (let i = 0; i < 10_000; i++) t.delete(`uid-${i}`);
    assert.equal(t.size, 0);
    assert.equal(t.revisionCount, 3);
    const r = t.report();
    assert.equal(
      Object.values(r).reduce((n, v) => n + v.failedPods, 0),
      1_000,
    );
    assert.ok(writeWorkloads(r).length < 8_000, 'the report stays small');
  });
});

describe('revision tally: carrying over a previous report', () => {
  test('failed Pods of the previous follower are kept beyond those failing now', () => {
    const previous = {
      v1: {
        pods: 4,
        started: 2,
        failing: 2,
        failedPods: 5,
        firstPodAt: '2026-11-27T09:00:00.000Z',
        samples: [{ ...pull('old.io/x:1'), pod: 'ns/gone', at: '2026-11-27T09:01:00.000Z' }],
      },
      v0: { pods: 0, started: 0, failing: 0, failedPods: 1, samples: [] },
    };
    const t = tally();
    t.upsert(obs('a', { failures: [pull()] }));
    t.upsert(obs('b', { failures: [pull()] }));
    t.upsert(obs('c', { started: true }));
    t.carryOver(previous);
    const r = t.report();
    assert.equal(r.v1?.failedPods, 5, 'the 2 failing now were among the 5');
    assert.equal(r.v1.pods, 3, 'counts of now');
    assert.equal(r.v1.firstPodAt, '2026-11-27T09:00:00.000Z');
    assert.deepEqual(
      r.v1.samples.map((s) => s.image),
      ['old.io/x:1', 'mirror.example.com/app:1'],
      'the previous samples first, so the report does not churn',
    );
    assert.equal(r.v0?.failedPods, 1);
    assert.equal(r.v0.firstPodAt, undefined, 'unknown before, unknown now');
    assert.deepEqual(Object.keys(r), ['v1', 'v0']);
    t.upsert(obs('d', { failures: [mount] }));
    assert.equal(t.report().v1?.failedPods, 6, 'a new failure adds to it');
    t.delete('a');
    assert.equal(t.report().v1?.failedPods, 6);
  });

  test('more failing now than reported before: nothing carried', () => {
    const t = tally();
    t.upsert(obs('a', { failures: [pull()] }));
    t.upsert(obs('b', { failures: [pull()] }));
    t.carryOver({ v1: { pods: 1, started: 0, failing: 1, failedPods: 1, samples: [] } });
    assert.equal(t.report().v1?.failedPods, 2);
  });
});

describe('revision tally: regressions (DESIGN §14)', () => {
  const failOn = (original: string): WorkloadFailure => ({ ...pull(), original });
  const at = (minutes: number): string => new Date(T0 + minutes * 60_000).toISOString();

  test('a failure is a regression proven here only if its original ran under another revision', () => {
    const t = tally();
    t.upsert(obs('stable', { revision: 'v1', createdAt: at(0), started: true, ran: ['k-app', 'k-side'] }));
    t.upsert(obs('a', { revision: 'v2', createdAt: at(5), failures: [failOn('k-app')] }));
    t.upsert(obs('b', { revision: 'v2', createdAt: at(5), failures: [failOn('k-app')] }));
    t.upsert(obs('forged', { revision: 'v2', createdAt: at(5), failures: [failOn('k-private')] }));
    const r = t.report();
    assert.equal(r.v2?.failedPods, 3);
    assert.equal(r.v2.regressions, 2, 'k-app ran under v1');
    assert.deepEqual(r.v2.unproven, [{ image: 'k-private', pods: 1 }]);
    assert.deepEqual(r.v1?.ran, ['k-app', 'k-side']);
  });

  test('an original that ran under the same revision proves nothing; ran is kept when Pods go', () => {
    const t = tally();
    t.upsert(obs('ok', { revision: 'v2', started: true, ran: ['k-app'] }));
    t.upsert(obs('bad', { revision: 'v2', failures: [failOn('k-app')] }));
    assert.equal(t.report().v2?.regressions, 0);
    t.upsert(obs('stable', { revision: 'v1', createdAt: at(-10), started: true, ran: ['k-app'] }));
    t.delete('stable');
    assert.equal(t.report().v2?.regressions, 1, 'proven by a Pod that ran and is gone now');
  });

  test('a Pod failing on the same original again counts once; bounds hold', () => {
    const t = tally();
    t.upsert(obs('a', { failures: [failOn('k')] }));
    t.upsert(obs('a'));
    t.upsert(obs('a', { failures: [failOn('k')] }));
    assert.deepEqual(t.report().v1?.unproven, [{ image: 'k', pods: 1 }]);
    for (let i = 0; i < 500; i++) {
      t.upsert(obs(`r${i}`, { revision: 'v0', createdAt: at(-1), started: true, ran: [`ran-${i}`] }));
      t.upsert(obs(`f${i}`, { failures: [failOn(`fail-${i}`)] }));
    }
    const r = t.report();
    assert.equal(r.v0?.ran?.length, MAX_RAN_ORIGINALS);
    assert.equal(r.v1?.unproven?.length, MAX_UNPROVEN_ORIGINALS);
    assert.deepEqual(readWorkloads(writeWorkloads(r)), r, 'within the contract');
  });

  test('a new leader keeps what the previous one proved and the originals it saw run', () => {
    const t = tally();
    t.upsert(obs('a', { revision: 'v2', createdAt: at(5), failures: [failOn('k-app')] }));
    t.carryOver({
      v1: { pods: 1, started: 1, failing: 0, failedPods: 0, samples: [], ran: ['k-app'] },
      v2: {
        pods: 3,
        started: 0,
        failing: 3,
        failedPods: 3,
        samples: [],
        regressions: 2,
        unproven: [{ image: 'k-other', pods: 1 }],
      },
    });
    const r = t.report();
    assert.equal(r.v2?.regressions, 2, 'a is proven through the carried ran; one more carried');
    assert.deepEqual(r.v2.unproven, [{ image: 'k-other', pods: 1 }]);
  });
});
