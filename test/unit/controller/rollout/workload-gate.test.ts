import assert from 'node:assert/strict';
import { WORKLOAD_WATCH_MS } from '../../../../src/controller/direct/webhook-report.js';
import { describe, test } from 'node:test';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import { policyOf, stateOf, statusOf } from '../../../../src/controller/rollout/policy-resource.js';
import {
  DEFAULT_MIN_FAILED_RUNTIMES,
  DEFAULT_WORKLOAD_GATE,
  type RolloutPolicy,
} from '../../../../src/controller/rollout/rollout-policy.js';
import type { RolloutState } from '../../../../src/controller/rollout/rollout-state.js';
import { runtimeView } from '../../../../src/controller/rollout/runtime-view.js';
import {
  planRollout,
  PREFLIGHT_DISCOVERY_READS,
  setOf,
  type PlanInput,
  type RuntimeView,
} from '../../../../src/controller/rollout/wave-planner.js';
import { DONE_V1, runtimeViews, WAVE0, planInput } from '../../../support/wave-planner-inputs.js';

const POLICY: RolloutPolicy = {
  waves: [{ name: 'canary', selector: { matchLabels: { canary: 'true' } }, soakMs: 60_000 }],
  failureThreshold: 0,
  minFailedRuntimes: DEFAULT_MIN_FAILED_RUNTIMES,
  healthDeadlineMs: 300_000,
  autoRollback: true,
  workloads: { toleratedFailures: 0, observeForMs: 120_000, preflight: true },
};
const IDS = ['rt-1', 'rt-2', 'rt-3'];

/** The fleet on `current`, healthy, rt-1 labelled canary. */
const fleet = (current: string, over: Record<string, Partial<RuntimeView>> = {}): RuntimeView[] =>
  runtimeViews(IDS, ['rt-1'], current, over);

const PREFLIGHT: RolloutState = { ...WAVE0, phase: 'Preflight' };

/** The canary on v2, the rest on v1. */
const canaryOn = (canary: Partial<RuntimeView>): RuntimeView[] =>
  fleet('v1', { 'rt-1': { current: 'v2', ...canary } });

const plan = (p: Partial<PlanInput>) => planRollout(planInput(POLICY, fleet('v1'), WAVE0, p));
const desired = (r: ReturnType<typeof planRollout>) => Object.fromEntries(r.desired);

describe('workload gate: failures under the target', () => {
  test('more failed Pods than tolerated fail the canary: halt, roll back, reason with the image', () => {
    const r = plan({
      runtimes: canaryOn({
        workloads: { pods: 3, failedPods: 1, firstPodAt: 0, detail: 'mirror/app:1: ImagePullBackOff' },
      }),
    });
    assert.equal(r.state.phase, 'Halted');
    assert.deepEqual(r.events, ['halted']);
    assert.deepEqual(r.rollback, ['rt-1']);
    assert.deepEqual(desired(r), { 'rt-1': 'v1', 'rt-2': 'v1', 'rt-3': 'v1' });
    assert.match(r.state.haltReason ?? '', /rt-1: 1 Pod\(s\) failed under set v2/);
    assert.match(r.state.haltReason ?? '', /mirror\/app:1: ImagePullBackOff/);
    assert.deepEqual(
      r.state.failures.map((f) => f.id),
      ['rt-1'],
    );
    assert.equal(r.watch.size, 0, 'halted: nothing to watch closely');
  });

  test('failures within toleratedFailures do not fail the runtime', () => {
    const r = plan({
      policy: { ...POLICY, workloads: { ...POLICY.workloads, toleratedFailures: 2 } },
      runtimes: canaryOn({ workloads: { pods: 3, failedPods: 2, firstPodAt: 0 } }),
    });
    assert.notEqual(r.state.phase, 'Halted');
  });

  test('with autoRollback off the canary keeps the target and nobody else gets it', () => {
    const r = plan({
      policy: { ...POLICY, autoRollback: false },
      runtimes: canaryOn({ workloads: { pods: 1, failedPods: 1, firstPodAt: 0 } }),
    });
    assert.equal(r.state.phase, 'Halted');
    assert.deepEqual(r.rollback, []);
    assert.deepEqual(desired(r), { 'rt-1': 'v2', 'rt-2': 'v1', 'rt-3': 'v1' });
  });

  test('a failure while soaking halts as well', () => {
    const soaking: RolloutState = { ...WAVE0, phase: 'Soaking', healthySince: 500 };
    const r = plan({
      state: soaking,
      now: 30_000,
      runtimes: canaryOn({ workloads: { pods: 2, failedPods: 1, firstPodAt: 100 } }),
    });
    assert.equal(r.state.phase, 'Halted');
  });

  test('failures within the failureThreshold: the runtime counts failed, the rollout goes on', () => {
    const r = plan({
      policy: { ...POLICY, failureThreshold: 1 },
      runtimes: canaryOn({ workloads: { pods: 2, failedPods: 1, firstPodAt: 0 } }),
    });
    assert.equal(r.state.phase, 'Soaking');
    assert.deepEqual(
      r.state.failures.map((f) => f.id),
      ['rt-1'],
    );
  });

  test('failures of a runtime not at the target are not the target’s (a wave not started)', () => {
    const r = plan({
      runtimes: fleet('v1', {
        'rt-1': { current: 'v2' },
        'rt-2': { workloads: { pods: 4, failedPods: 4, firstPodAt: 0 } },
      }),
    });
    assert.equal(r.state.phase, 'Soaking');
    assert.deepEqual(r.state.failures, []);
  });

  test('the default policy (no gate) never counts failures', () => {
    const r = plan({
      policy: {
        waves: [{ name: 'all', percent: 100, soakMs: 0 }],
        failureThreshold: Number.POSITIVE_INFINITY,
        minFailedRuntimes: DEFAULT_MIN_FAILED_RUNTIMES,
        healthDeadlineMs: 1,
        autoRollback: true,
        workloads: { toleratedFailures: Number.POSITIVE_INFINITY, observeForMs: 0, preflight: false },
      },
      runtimes: fleet('v2', { 'rt-1': { workloads: { pods: 1, failedPods: 9, firstPodAt: 0 } } }),
    });
    assert.equal(r.state.phase, 'Complete');
  });
});

describe('workload gate: observing Pods', () => {
  const soaked: RolloutState = { ...WAVE0, phase: 'Soaking', healthySince: 0 };

  test('soaked, but Pods ran under the target for less than observeFor: still soaking, wake then', () => {
    const r = plan({
      state: soaked,
      now: 70_000,
      runtimes: canaryOn({ workloads: { pods: 2, failedPods: 0, firstPodAt: 50_000 } }),
    });
    assert.equal(r.state.phase, 'Soaking');
    assert.equal(r.state.wave, 0);
    assert.equal(r.wakeAt, 170_000);
    assert.match(r.message, /Pods under observation: rt-1/);
    assert.deepEqual([...r.watch], ['rt-1']);
  });

  test('once they ran observeFor long (and the soak passed) the next wave starts', () => {
    const r = plan({
      state: soaked,
      now: 170_000,
      runtimes: canaryOn({ workloads: { pods: 2, failedPods: 0, firstPodAt: 50_000 } }),
    });
    assert.equal(r.state.wave, 1);
    assert.deepEqual(r.events, ['advanced']);
    assert.deepEqual(desired(r), { 'rt-1': 'v2', 'rt-2': 'v2', 'rt-3': 'v2' });
    assert.deepEqual([...r.watch].sort(), ['rt-1', 'rt-2', 'rt-3']);
  });

  test('Pods observed long enough do not shorten the soak', () => {
    const r = plan({
      state: { ...soaked, healthySince: 10_000 },
      now: 60_000,
      runtimes: canaryOn({ workloads: { pods: 2, failedPods: 0, firstPodAt: 0 } }),
    });
    assert.equal(r.state.phase, 'Soaking');
    assert.equal(r.wakeAt, 70_000);
  });

  test('no Pod under the target: pending until the soak ends, then healthy, and the message says so', () => {
    const noPods = canaryOn({ workloads: { pods: 0, failedPods: 0 } });
    const during = plan({ state: soaked, now: 30_000, runtimes: noPods });
    assert.equal(during.state.phase, 'Soaking');
    assert.match(during.message, /no Pod under the revision \(healthy once its wave soaked\): rt-1/);
    const after = plan({ state: soaked, now: 60_000, runtimes: noPods });
    assert.equal(after.state.wave, 1);
    assert.deepEqual(after.events, ['advanced']);
  });

  test('no report of workloads at all (an older webhook): as before, the soak alone decides', () => {
    const r = plan({ state: soaked, now: 60_000, runtimes: canaryOn({}) });
    assert.equal(r.state.wave, 1);
    assert.doesNotMatch(r.message, /no Pod under/);
  });

  test('a runtime with Pods under observation is healthy for the health deadline', () => {
    const r = plan({
      state: { ...soaked, healthySince: 0 },
      now: 400_000,
      policy: { ...POLICY, workloads: { ...POLICY.workloads, observeForMs: 1_000_000 } },
      runtimes: canaryOn({ workloads: { pods: 1, failedPods: 0, firstPodAt: 0 } }),
    });
    assert.equal(r.state.phase, 'Soaking');
    assert.deepEqual(r.state.failures, []);
  });

  test('the complete message names runtimes counted healthy without a Pod', () => {
    const r = plan({
      state: { ...WAVE0, wave: 1, phase: 'Soaking', healthySince: 0 },
      now: 1_000,
      runtimes: fleet('v2', { 'rt-3': { workloads: { pods: 0, failedPods: 0 } } }),
    });
    assert.equal(r.state.phase, 'Complete');
    assert.match(r.message, /complete: v2 on every wave; no Pod under the revision .*: rt-3/);
  });
});

describe('preflight phase', () => {
  const checking = { followsPods: true, workloads: { pods: 0, failedPods: 0 } };

  test('a new target whose overrides or pull Secret changed starts with Preflight: nobody gets it', () => {
    const r = planRollout({
      policy: POLICY,
      runtimes: fleet('v1', { 'rt-1': checking }),
      target: 'v2',
      state: DONE_V1,
      now: 1_000,
      workloadWatchMs: WORKLOAD_WATCH_MS,
      preflightNeeded: true,
    });
    assert.equal(r.state.phase, 'Preflight');
    assert.equal(r.state.stable, 'v1');
    assert.deepEqual(r.events, ['started']);
    assert.deepEqual(desired(r), { 'rt-1': 'v1', 'rt-2': 'v1', 'rt-3': 'v1' });
    assert.deepEqual([...r.preflight], ['rt-1']);
    assert.deepEqual([...r.watch], ['rt-1']);
    assert.equal(r.wakeAt, 1_000 + POLICY.healthDeadlineMs);
    assert.match(r.message, /preflight of set v2 on wave canary: 0\/1 checked/);
  });

  test('no preflight when the policy turns it off, or nothing it checks changed', () => {
    for (const [policy, needed] of [
      [{ ...POLICY, workloads: { ...POLICY.workloads, preflight: false } }, true],
      [POLICY, false],
    ] as const) {
      const r = planRollout({
        policy,
        runtimes: fleet('v1'),
        target: 'v2',
        state: DONE_V1,
        now: 1,
        workloadWatchMs: WORKLOAD_WATCH_MS,
        preflightNeeded: needed,
      });
      assert.equal(r.state.phase, 'Progressing', 'wave 0 started at once');
      assert.equal(r.desired.get('rt-1'), 'v2');
      assert.equal(r.preflight.size, 0);
    }
  });

  test('a missing image on a canary halts before anyone has the set, naming the image', () => {
    const r = plan({
      state: PREFLIGHT,
      runtimes: fleet('v1', {
        'rt-1': {
          ...checking,
          preflight: {
            set: 'v2',
            done: true,
            failed: true,
            detail: '1 missing, 0 refused of 3 checked: missing reg/app:1 at mirror/app:1',
          },
        },
      }),
    });
    assert.equal(r.state.phase, 'Halted');
    assert.deepEqual(r.events, ['halted']);
    assert.match(
      r.state.haltReason ?? '',
      /preflight failed on 1 runtime\(s\) of wave canary \(minimum 1\) before any had the set; rt-1: preflight of set v2: .*missing reg\/app:1 at mirror\/app:1/,
    );
    assert.deepEqual(r.rollback, []);
    assert.deepEqual(desired(r), { 'rt-1': 'v1', 'rt-2': 'v1', 'rt-3': 'v1' });
    assert.equal(r.preflight.size, 0, 'the candidate is taken away');
  });

  test('a canary whose figures are of another set (read before a rollback) still checks: its refusal halts', () => {
    const r = plan({
      state: PREFLIGHT,
      runtimes: fleet('v1', {
        'rt-1': {
          followsPods: true,
          preflight: { set: 'v2', done: true, failed: true, detail: '0 missing, 1 refused of 1 checked' },
        },
      }),
    });
    assert.equal(r.state.phase, 'Halted');
    assert.match(r.state.haltReason ?? '', /1 refused/);
    const waiting = plan({ state: PREFLIGHT, runtimes: fleet('v1', { 'rt-1': { followsPods: true } }) });
    assert.equal(waiting.state.phase, 'Preflight', 'its report is waited for');
  });

  test('a report of another set (an earlier candidate) is not this preflight', () => {
    const r = plan({
      state: PREFLIGHT,
      runtimes: fleet('v1', { 'rt-1': { ...checking, preflight: { set: 'v0', done: true, failed: true } } }),
    });
    assert.equal(r.state.phase, 'Preflight');
  });

  test('still running: Preflight goes on', () => {
    const r = plan({
      state: PREFLIGHT,
      runtimes: fleet('v1', {
        'rt-1': { ...checking, preflight: { set: 'v2', done: false, failed: false } },
      }),
    });
    assert.equal(r.state.phase, 'Preflight');
    assert.deepEqual(r.events, []);
  });

  test('every canary checked and fine: wave 0 starts in the same pass', () => {
    const r = plan({
      state: PREFLIGHT,
      now: 5_000,
      runtimes: fleet('v1', { 'rt-1': { ...checking, preflight: { set: 'v2', done: true, failed: false } } }),
    });
    assert.equal(r.state.phase, 'Progressing');
    assert.equal(r.state.wave, 0);
    assert.equal(r.state.waveStartedAt, 5_000, 'the health deadline counts from the wave’s start');
    assert.deepEqual(r.events, ['preflighted']);
    assert.deepEqual(desired(r), { 'rt-1': 'v2', 'rt-2': 'v1', 'rt-3': 'v1' });
    assert.equal(r.preflight.size, 0);
  });

  test('the deadline passes without a report: wave 0 starts (the soak still watches the Pods)', () => {
    const r = plan({
      state: PREFLIGHT,
      now: POLICY.healthDeadlineMs,
      runtimes: fleet('v1', { 'rt-1': checking }),
    });
    assert.equal(r.state.phase, 'Progressing');
    assert.deepEqual(r.events, ['preflighted']);
  });

  test('a canary whose webhook reports no workloads cannot check: waited for only until its report was read', () => {
    // Its report may not have been read since it was installed: the preflight waits three reads.
    const discoveryMs = PREFLIGHT_DISCOVERY_READS * WORKLOAD_WATCH_MS;
    const early = plan({ state: PREFLIGHT, runtimes: fleet('v1') });
    assert.equal(early.state.phase, 'Preflight');
    assert.equal(early.wakeAt, discoveryMs, 'looks again once the reports were read');
    assert.equal(
      plan({ state: PREFLIGHT, runtimes: fleet('v1'), now: discoveryMs - 1 }).state.phase,
      'Preflight',
    );
    const r = plan({ state: PREFLIGHT, runtimes: fleet('v1'), now: discoveryMs });
    assert.equal(r.state.phase, 'Progressing');
    // Reports read more often (the setting): the wait is as many of those reads.
    const often = plan({ state: PREFLIGHT, runtimes: fleet('v1'), workloadWatchMs: 1_000 });
    assert.equal(often.wakeAt, PREFLIGHT_DISCOVERY_READS * 1_000);
    const soon = plan({ state: PREFLIGHT, runtimes: fleet('v1'), workloadWatchMs: 1_000, now: 3_000 });
    assert.equal(soon.state.phase, 'Progressing');
    const two = planRollout({
      policy: { ...POLICY, waves: [{ name: 'canary', percent: 100, soakMs: 0 }] },
      runtimes: fleet('v1', { 'rt-1': checking }),
      target: 'v2',
      state: PREFLIGHT,
      now: 1_000,
      workloadWatchMs: WORKLOAD_WATCH_MS,
    });
    assert.equal(two.state.phase, 'Preflight');
    assert.match(two.message, /0\/1 checked; not checking \(webhook reports no workloads\): rt-2, rt-3/);
  });

  test('an empty first wave has nothing to check', () => {
    const r = plan({ state: PREFLIGHT, runtimes: fleet('v1', { 'rt-1': { labels: {} } }) });
    assert.notEqual(r.state.phase, 'Preflight');
  });

  test('excluded runtimes are not asked', () => {
    const r = plan({ state: PREFLIGHT, runtimes: fleet('v1', { 'rt-1': { ...checking, excluded: true } }) });
    assert.notEqual(r.state.phase, 'Preflight');
  });

  test('a resume of a preflight halt starts wave 0 (the operator overrides the check)', () => {
    const halted: RolloutState = { ...PREFLIGHT, phase: 'Halted', haltReason: 'preflight failed' };
    const r = plan({ state: halted, resumeToken: 'go', runtimes: fleet('v1', { 'rt-1': checking }) });
    assert.deepEqual(r.events, ['resumed']);
    assert.equal(r.state.phase, 'Progressing');
    assert.equal(r.desired.get('rt-1'), 'v2');
  });

  test('Preflight survives a restart: the status holds the phase and its start', () => {
    const status = statusOf({
      state: PREFLIGHT,
      policy: POLICY,
      generation: 1,
      message: 'm',
      runtimes: { total: 3, atTarget: 0, healthy: 0 },
    });
    assert.equal(status.phase, 'Preflight');
    // What the status does not hold reads back as undefined.
    const unset = { healthySince: undefined, haltReason: undefined, resumeToken: undefined };
    assert.deepEqual(stateOf(status), { ...PREFLIGHT, ...unset });
  });
});

describe('policy fields and the runtime view', () => {
  const resource = (workloads: Record<string, unknown> | undefined) => ({
    metadata: { name: 'default' },
    spec: { waves: [{ name: 'canary', percent: 10 }], ...(workloads ? { workloads } : {}) },
  });

  test('spec.workloads defaults to no failure tolerated, 5 minutes, preflight on', () => {
    assert.deepEqual(
      policyOf(resource(undefined), { autoRollback: true }).policy.workloads,
      DEFAULT_WORKLOAD_GATE,
    );
    assert.deepEqual(DEFAULT_WORKLOAD_GATE, { toleratedFailures: 0, observeForMs: 300_000, preflight: true });
    assert.deepEqual(
      policyOf(resource({ toleratedFailures: 2, observeFor: '90s', preflight: false }), {
        autoRollback: true,
      }).policy.workloads,
      { toleratedFailures: 2, observeForMs: 90_000, preflight: false },
    );
  });

  test('a bad observeFor or a negative toleratedFailures is a policy problem', () => {
    assert.match(
      policyOf(resource({ observeFor: 'soon' }), { autoRollback: true }).problem ?? '',
      /workloads.observeFor/,
    );
    assert.match(
      policyOf(resource({ toleratedFailures: -1 }), { autoRollback: true }).problem ?? '',
      /toleratedFailures/,
    );
  });

  test('setOf takes the set version of a revision ID', () => {
    assert.equal(setOf('abc/1.0.0'), 'abc');
    assert.equal(setOf('abc'), 'abc');
  });

  const rb = (status: RuntimeBootstrapper['status']): RuntimeBootstrapper => ({
    metadata: { name: 'rt-1', namespace: 'kcp-system' },
    spec: { runtimeID: 'rt-1' },
    status,
  });
  const sample = {
    kind: 'image-pull' as const,
    pod: 'ns/p',
    image: 'mirror/app:1',
    reason: 'ImagePullBackOff',
    at: 't',
  };

  test('the view takes the workloads of the set applied only, with the samples in one line', () => {
    const base = { state: 'Ready' as const, appliedVersion: 's2', webhookVersion: '1', servedVersion: 's2' };
    const w = {
      pods: 2,
      started: 1,
      failing: 1,
      failedPods: 1,
      firstPodAt: '2026-01-01T00:00:00Z',
      samples: [sample],
    };
    const v = runtimeView(rb({ ...base, workloads: { ...w, revision: 's2' } }));
    assert.deepEqual(v.workloads, {
      pods: 2,
      failedPods: 1,
      firstPodAt: Date.parse('2026-01-01T00:00:00Z'),
      detail: 'mirror/app:1: ImagePullBackOff',
    });
    assert.equal(v.health, 'healthy', 'the gate is the planner’s, by the policy');
    const stale = runtimeView(rb({ ...base, workloads: { ...w, revision: 's1' } }));
    assert.equal(stale.workloads, undefined);
    assert.equal(stale.followsPods, true, 'figures of another set still say the webhook follows Pods');
    assert.equal(runtimeView(rb(base)).followsPods, undefined);
    assert.deepEqual(
      runtimeView(rb({ ...base, workloads: { ...w, firstPodAt: 'x', samples: [], revision: 's2' } }))
        .workloads,
      { pods: 2, failedPods: 1, firstPodAt: undefined, detail: undefined },
    );
  });

  test('the view takes the preflight: failed only when done with missing or refused images', () => {
    const p = {
      version: 's3',
      phase: 'done' as const,
      checked: 3,
      skipped: 0,
      missing: 1,
      refused: 0,
      unreachable: 1,
      samples: [
        { image: 'reg/a:1', target: 'mirror/a:1', result: 'missing' as const },
        { image: 'reg/b:1', target: 'mirror/b:1', result: 'unreachable' as const },
      ],
      startedAt: 't',
    };
    assert.deepEqual(runtimeView(rb({ preflight: p })).preflight, {
      set: 's3',
      done: true,
      failed: true,
      detail: '1 missing, 0 refused of 3 checked: missing reg/a:1 at mirror/a:1',
    });
    assert.deepEqual(runtimeView(rb({ preflight: { ...p, phase: 'running' } })).preflight, {
      set: 's3',
      done: false,
      failed: false,
      detail: undefined,
    });
    assert.deepEqual(
      runtimeView(rb({ preflight: { ...p, missing: 0 } })).preflight?.failed,
      false,
      'unreachable is not the candidate’s fault',
    );
  });
});
