import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { PhaseClock, phaseLines } from '../../../src/local/phase-timings.js';
import { lastPodTimes } from '../../../src/local/webhook-pod-times.js';

/** A clock that reads the values given, one per call. */
const steps = (...ms: number[]): (() => number) => {
  let i = 0;
  return () => ms[Math.min(i++, ms.length - 1)] ?? 0;
};

test('each step takes from the end of the step before; details keep their own span and do not move it', () => {
  const clock = new PhaseClock(steps(1_000, 13_500, 40_000));
  assert.equal(clock.mark('binaries'), 1_000);
  clock.mark('control plane');
  clock.detail('the slowest node', 6_000, 13_500);
  clock.mark('webhook Ready');
  assert.deepEqual(phaseLines(clock.phases), [
    'step                  took  done at',
    'binaries             1.0 s    1.0 s',
    'control plane       12.5 s   13.5 s',
    '  the slowest node   7.5 s   13.5 s',
    'webhook Ready       26.5 s   40.0 s',
  ]);
});

test('a detail with an unknown end or start is left out', () => {
  const clock = new PhaseClock(steps(2_000));
  clock.mark('a');
  clock.detail('no end', 0, undefined);
  clock.detail('no start', undefined, 1_000);
  assert.deepEqual(
    clock.phases.map((p) => p.name),
    ['a'],
  );
});

const pod = (created: string, started?: string, ready?: string): V1Pod => ({
  metadata: { creationTimestamp: new Date(created) },
  status: {
    containerStatuses: started
      ? [
          {
            name: 'manager',
            image: 'x',
            imageID: '',
            ready: ready !== undefined,
            restartCount: 0,
            state: { running: { startedAt: new Date(started) } },
          },
        ]
      : [],
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: new Date(created) },
      ...(ready ? [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(ready) }] : []),
    ],
  },
});

test("the webhook Pods' times are the slowest Pod's: a Deployment is available when its last Pod is", () => {
  const t = lastPodTimes([
    pod('2026-12-02T04:00:01Z', '2026-12-02T04:00:09Z', '2026-12-02T04:00:20Z'),
    pod('2026-12-02T04:00:02Z', '2026-12-02T04:00:07Z', '2026-12-02T04:00:11Z'),
  ]);
  assert.deepEqual(t, {
    createdAt: Date.parse('2026-12-02T04:00:02Z'),
    startedAt: Date.parse('2026-12-02T04:00:09Z'),
    readyAt: Date.parse('2026-12-02T04:00:20Z'),
  });
});

test('a Pod not started or not Ready leaves that time unknown, and no Pods leave all unknown', () => {
  const t = lastPodTimes([
    pod('2026-12-02T04:00:01Z', '2026-12-02T04:00:09Z', '2026-12-02T04:00:20Z'),
    pod('2026-12-02T04:00:02Z'),
  ]);
  assert.equal(t.createdAt, Date.parse('2026-12-02T04:00:02Z'));
  assert.equal(t.startedAt, undefined);
  assert.equal(t.readyAt, undefined);
  assert.deepEqual(lastPodTimes([]), { createdAt: undefined, startedAt: undefined, readyAt: undefined });
});
