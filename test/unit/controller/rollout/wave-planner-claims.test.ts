/**
 * A runtime's report is a claim about that runtime only (DESIGN §14): a halt needs failures on
 * more than one runtime unless the policy says one is enough, a report's dates are bounded by what
 * the KCP saw, and a runtime that never settles fails itself at a deadline instead of holding
 * the wave.
 */
import assert from 'node:assert/strict';
import { WORKLOAD_WATCH_MS } from '../../../../src/controller/direct/webhook-report.js';
import { describe, test } from 'node:test';
import type {
  RuntimeBootstrapper,
  RuntimeBootstrapperStatus,
} from '../../../../src/api/runtime-bootstrapper.js';
import { policyOf } from '../../../../src/controller/rollout/policy-resource.js';
import {
  DEFAULT_MIN_FAILED_RUNTIMES,
  DEFAULT_ROLLOUT_POLICY,
  type RolloutPolicy,
} from '../../../../src/controller/rollout/rollout-policy.js';
import type { RolloutState } from '../../../../src/controller/rollout/rollout-state.js';
import { runtimeView } from '../../../../src/controller/rollout/runtime-view.js';
import {
  firstPodAtOf,
  haltMinimum,
  planRollout,
  type PlanInput,
  type RolloutPlan,
  type RuntimeView,
} from '../../../../src/controller/rollout/wave-planner.js';
import { runtimeViews, WAVE0, planInput } from '../../../support/wave-planner-inputs.js';

const SOAK = 60_000;
const OBSERVE = 120_000;
const DEADLINE = 300_000;
/** A canary wave (label `canary`), then the rest; the default minimum, no failure tolerated. */
const POLICY: RolloutPolicy = {
  waves: [{ name: 'canary', selector: { matchLabels: { canary: 'true' } }, soakMs: SOAK }],
  failureThreshold: 0,
  minFailedRuntimes: DEFAULT_MIN_FAILED_RUNTIMES,
  healthDeadlineMs: DEADLINE,
  autoRollback: true,
  workloads: { toleratedFailures: 0, observeForMs: OBSERVE, preflight: true },
};
const IDS = ['rt-1', 'rt-2', 'rt-3', 'rt-4', 'rt-5'] as const;
const REST = ['rt-3', 'rt-4', 'rt-5'] as const;

/**
 * The fleet: every runtime on `current`, healthy; `canaries` labelled canary (by default rt-1 and
 * rt-2: a wave of two).
 */
function fleet(
  current: string,
  over: Record<string, Partial<RuntimeView>> = {},
  canaries: readonly string[] = ['rt-1', 'rt-2'],
): RuntimeView[] {
  return runtimeViews(IDS, canaries, current, over);
}

/** v2 on the last wave (everyone), started at 0. */
const LAST: RolloutState = { ...WAVE0, wave: 1 };

const plan = (p: Partial<PlanInput>): RolloutPlan => planRollout(planInput(POLICY, fleet('v1'), WAVE0, p));
const desired = (r: RolloutPlan): Record<string, string> => Object.fromEntries(r.desired);
const failedIds = (r: RolloutPlan): string[] => r.state.failures.map((f) => f.id);
const refused = { health: 'failed' as const, reason: 'the webhook refused set v2' };

describe('a halt needs failures on more than one runtime (minFailedRuntimes)', () => {
  test('the minimum in force: the policy’s, capped at the runtimes started, at least 1', () => {
    const at = (minFailedRuntimes: number, members: number): number =>
      haltMinimum({ ...POLICY, minFailedRuntimes }, members);
    assert.equal(DEFAULT_MIN_FAILED_RUNTIMES, 2);
    assert.deepEqual(
      [0, 1, 2, 3, 50].map((n) => at(2, n)),
      [1, 1, 2, 2, 2],
      'default: 2 where the started waves hold 2 or more runtimes, else 1',
    );
    assert.deepEqual(
      [0, 1, 5].map((n) => at(1, n)),
      [1, 1, 1],
    );
    assert.deepEqual(
      [1, 3, 5, 9].map((n) => at(5, n)),
      [1, 3, 5, 5],
    );
  });

  test('default, a one-runtime wave: its one failure halts and rolls it back, as before', () => {
    const canaries = ['rt-1'];
    const r = plan({ runtimes: fleet('v1', { 'rt-1': { current: 'v2', ...refused } }, canaries) });
    assert.equal(r.state.phase, 'Halted');
    assert.match(
      r.state.haltReason ?? '',
      /^1 runtime\(s\) failed in wave canary \(threshold 0, minimum 1\)/,
    );
    assert.deepEqual(r.rollback, ['rt-1']);
  });

  test('default, a wave of two: one failed runtime is counted, not acted on; nobody is rolled back', () => {
    const r = plan({
      runtimes: fleet('v1', { 'rt-1': { current: 'v2', ...refused }, 'rt-2': { current: 'v2' } }),
    });
    assert.equal(r.state.phase, 'Soaking', 'rt-1 counts failed, rt-2 healthy: the wave soaks');
    assert.deepEqual(r.events, []);
    assert.deepEqual(r.rollback, []);
    assert.deepEqual(desired(r), { 'rt-1': 'v2', 'rt-2': 'v2', 'rt-3': 'v1', 'rt-4': 'v1', 'rt-5': 'v1' });
    assert.deepEqual(failedIds(r), ['rt-1']);
    assert.match(
      r.message,
      /^soaking, wave 1\/2 \(canary\): 1\/2 healthy at v2; failed, counted against the halt \(halts at 2 failed runtimes\): rt-1$/,
    );
  });

  test('default, a wave of two: both failed halt and roll both back', () => {
    const r = plan({
      runtimes: fleet('v1', { 'rt-1': { current: 'v2', ...refused }, 'rt-2': { current: 'v2', ...refused } }),
    });
    assert.equal(r.state.phase, 'Halted');
    assert.match(
      r.state.haltReason ?? '',
      /^2 runtime\(s\) failed in wave canary \(threshold 0, minimum 2\); rt-1: /,
    );
    assert.deepEqual(r.rollback, ['rt-1', 'rt-2']);
    assert.ok(IDS.every((id) => r.desired.get(id) === 'v1'));
  });

  test('minFailedRuntimes 1 restores one-is-enough: one failed runtime of a wave of two halts', () => {
    const policy = { ...POLICY, minFailedRuntimes: 1 };
    const r = plan({
      policy,
      runtimes: fleet('v1', { 'rt-1': { current: 'v2', ...refused }, 'rt-2': { current: 'v2' } }),
    });
    assert.equal(r.state.phase, 'Halted');
    assert.deepEqual(r.rollback, ['rt-1', 'rt-2']);
  });

  test('both must hold: more than failureThreshold, and at least the minimum', () => {
    const failing = (n: number): RuntimeView[] =>
      fleet('v2', Object.fromEntries(IDS.slice(0, n).map((id) => [id, refused])));
    const phase = (p: Partial<RolloutPolicy>, n: number): string =>
      plan({ policy: { ...POLICY, ...p }, state: LAST, runtimes: failing(n) }).state.phase;
    // The threshold decides where it is above the minimum...
    assert.notEqual(phase({ failureThreshold: 2 }, 2), 'Halted');
    assert.equal(phase({ failureThreshold: 2 }, 3), 'Halted');
    // ...and the minimum where it is above the threshold.
    assert.notEqual(phase({ minFailedRuntimes: 3 }, 2), 'Halted');
    assert.equal(phase({ minFailedRuntimes: 3 }, 3), 'Halted');
    assert.equal(phase({}, 2), 'Halted');
    assert.notEqual(phase({}, 1), 'Halted');
  });

  test('a minimum above the runtimes started is capped: every one of them failing halts', () => {
    const policy = { ...POLICY, minFailedRuntimes: 5 };
    const r = plan({
      policy,
      runtimes: fleet('v1', { 'rt-1': { current: 'v2', ...refused }, 'rt-2': { current: 'v2', ...refused } }),
    });
    assert.equal(r.state.phase, 'Halted');
    assert.match(r.state.haltReason ?? '', /\(threshold 0, minimum 2\)/);
  });

  test('failures add up over the waves started: one in the canary, one in the rest halt', () => {
    const soaked = plan({
      now: SOAK + 1_000,
      state: { ...WAVE0, phase: 'Soaking', healthySince: 1_000 },
      runtimes: fleet('v1', { 'rt-1': { current: 'v2', ...refused }, 'rt-2': { current: 'v2' } }),
    });
    assert.equal(soaked.state.wave, 1, 'one failed canary of two: the next wave starts');
    assert.deepEqual(soaked.events, ['advanced']);
    assert.ok(IDS.every((id) => soaked.desired.get(id) === 'v2'));
    const second = plan({
      now: SOAK + 2_000,
      state: soaked.state,
      runtimes: fleet('v2', { 'rt-1': refused, 'rt-4': { ...refused, reason: 'broken mirror' } }),
    });
    assert.equal(second.state.phase, 'Halted');
    assert.deepEqual(failedIds(second), ['rt-1', 'rt-4']);
    assert.deepEqual(second.rollback, [...IDS]);
  });

  test('a runtime failed within the minimum does not keep the rollout from completing', () => {
    const r = plan({ state: LAST, runtimes: fleet('v2', { 'rt-3': refused }) });
    assert.equal(r.state.phase, 'Complete');
    assert.equal(r.state.stable, 'v2');
    assert.deepEqual(failedIds(r), ['rt-3']);
    assert.match(
      r.message,
      /^complete: v2 on every wave; failed, counted against the halt \(halts at 2 failed runtimes\): rt-3$/,
    );
  });

  test('the message says when the rollout would halt: the larger of threshold + 1 and the minimum', () => {
    const r = plan({
      policy: { ...POLICY, failureThreshold: 3 },
      state: LAST,
      runtimes: fleet('v2', { 'rt-3': refused }),
    });
    assert.match(r.message, /\(halts at 4 failed runtimes\): rt-3$/);
  });

  test('the default policy (no RolloutPolicy) never halts, and says so', () => {
    const r = planRollout({
      policy: DEFAULT_ROLLOUT_POLICY,
      runtimes: fleet('v2', { 'rt-1': refused, 'rt-2': refused, 'rt-3': refused }),
      target: 'v2',
      state: { ...WAVE0, wave: 0 },
      now: 1_000,
      workloadWatchMs: WORKLOAD_WATCH_MS,
    });
    assert.equal(r.state.phase, 'Complete');
    assert.match(r.message, /this policy never halts/);
  });
});

describe('a runtime admin’s refusedVersion speaks for that runtime only', () => {
  const applied = 'v2';
  const at = (id: string, s: Partial<RuntimeBootstrapperStatus> = {}): RuntimeBootstrapper => ({
    metadata: {
      name: id,
      namespace: 'kcp-system',
      labels: id === 'rt-1' || id === 'rt-2' ? { canary: 'true' } : {},
    },
    spec: { runtimeID: id },
    status: {
      state: 'Ready',
      appliedVersion: applied,
      webhookVersion: '1',
      servedVersion: applied,
      appliedAt: '2026-01-01T00:00:00Z',
      ...s,
    },
  });
  /** rt-3's admin writes refusedVersion = the target into its status ConfigMap; the KCP read it. */
  const forged = (): RuntimeView[] =>
    IDS.map((id) =>
      runtimeView(
        id === 'rt-3' ? at(id, { refusedVersion: applied, refusal: 'forged', servedVersion: 'v1' }) : at(id),
      ),
    );

  test('it fails that runtime (its own status), no other', () => {
    const views = forged();
    assert.deepEqual(
      views.map((v) => v.health),
      ['healthy', 'healthy', 'failed', 'healthy', 'healthy'],
    );
  });

  test('in a wave of several it halts nothing and rolls nobody back; the others get and keep the target', () => {
    const r = plan({
      target: 'v2/1',
      state: { ...LAST, target: 'v2/1', stable: 'v1/1' },
      runtimes: forged(),
    });
    assert.equal(r.state.phase, 'Complete');
    assert.deepEqual(r.rollback, []);
    assert.ok(IDS.every((id) => r.desired.get(id) === 'v2/1'));
    assert.deepEqual(r.state.failures, [{ id: 'rt-3', reason: 'the webhook refused set v2: forged' }]);
  });

  test('a resume does not bring the halt back: the same forged report still halts nothing', () => {
    const halted: RolloutState = {
      ...LAST,
      target: 'v2/1',
      stable: 'v1/1',
      phase: 'Halted',
      haltReason: 'x',
    };
    const r = plan({ target: 'v2/1', state: halted, runtimes: forged(), resumeToken: 'go', now: 5_000 });
    assert.deepEqual(r.events, ['resumed', 'advanced', 'completed']);
    assert.deepEqual(r.rollback, []);
  });
});

describe('a report’s dates are bounded by what the KCP saw', () => {
  const observed = (firstPodAt: number | undefined, appliedAt?: number): RuntimeView => ({
    id: 'rt-1',
    health: 'healthy',
    ...(appliedAt !== undefined ? { appliedAt } : {}),
    workloads: { pods: 1, failedPods: 0, ...(firstPodAt !== undefined ? { firstPodAt } : {}) },
  });

  test('firstPodAt: never after now, never before the KCP applied the set there', () => {
    assert.equal(firstPodAtOf(observed(8.64e15), 10_000), 10_000, 'the far future is now');
    assert.equal(firstPodAtOf(observed(5_000), 10_000), 5_000);
    assert.equal(firstPodAtOf(observed(0, 7_000), 10_000), 7_000, 'not before the set was applied');
    assert.equal(firstPodAtOf(observed(8_000, 7_000), 10_000), 8_000);
    assert.equal(firstPodAtOf(observed(undefined, 7_000), 10_000), undefined, 'no Pod: none');
    assert.equal(firstPodAtOf(observed(0, 20_000), 10_000), 10_000, 'now bounds even the KCP’s own date');
  });

  test('the runtime view carries the KCP’s appliedAt (an unreadable one is left out)', () => {
    const view = (appliedAt: string | undefined): RuntimeView =>
      runtimeView({
        metadata: { name: 'rt-1', namespace: 'kcp-system' },
        spec: { runtimeID: 'rt-1' },
        status: { state: 'Ready', appliedVersion: 's', ...(appliedAt !== undefined ? { appliedAt } : {}) },
      });
    assert.equal(view('2026-01-01T00:00:00Z').appliedAt, Date.parse('2026-01-01T00:00:00Z'));
    assert.equal(view('yesterday').appliedAt, undefined);
    assert.equal(view(undefined).appliedAt, undefined);
  });

  test('a firstPodAt long before the set was applied does not skip the observation', () => {
    const soaked: RolloutState = { ...WAVE0, phase: 'Soaking', healthySince: 1_000 };
    const r = plan({
      state: soaked,
      now: SOAK + 1_000,
      runtimes: fleet('v1', {
        'rt-1': { current: 'v2', appliedAt: 50_000, workloads: { pods: 1, failedPods: 0, firstPodAt: 0 } },
        'rt-2': { current: 'v2' },
      }),
    });
    assert.equal(r.state.phase, 'Soaking', 'observed from 50 s (applied), not from 0');
    assert.equal(r.wakeAt, 50_000 + OBSERVE);
  });
});

describe('a runtime that never settles fails itself at a deadline instead of holding the wave', () => {
  const soaked: RolloutState = { ...WAVE0, phase: 'Soaking', healthySince: 1_000 };
  /** When the soak ended plus observeFor: the last moment a runtime's Pods may be under observation. */
  const observeDeadline = 1_000 + SOAK + OBSERVE;
  const farFuture = { pods: 1, failedPods: 0, firstPodAt: Date.parse('2999-01-01T00:00:00Z') };

  /** Runs passes every 10 s from `from`, as the coordinator would, until the wave changes or `until`. */
  function walk(runtimes: RuntimeView[], state: RolloutState, from: number, until: number, policy = POLICY) {
    let s = state;
    let last: RolloutPlan | undefined;
    for (let now = from; now <= until; now += 10_000) {
      last = plan({ policy, state: s, now, runtimes });
      s = last.state;
      if (s.wave !== state.wave || s.phase === 'Halted') return { plan: last, at: now };
    }
    return { plan: last, at: undefined };
  }

  test('a far-future firstPodAt: soaking until observeFor after the soak, then that runtime failed, the wave moves on', () => {
    const runtimes = fleet('v1', {
      'rt-1': { current: 'v2', workloads: farFuture },
      'rt-2': { current: 'v2' },
    });
    const atSoakEnd = plan({ state: soaked, now: 1_000 + SOAK, runtimes });
    assert.equal(atSoakEnd.state.phase, 'Soaking', 'its Pods count as just seen: observed observeFor long');
    assert.match(atSoakEnd.message, /Pods under observation: rt-1/);
    assert.ok(
      atSoakEnd.wakeAt !== undefined && atSoakEnd.wakeAt <= observeDeadline,
      'woken by the deadline at the latest',
    );
    const before = plan({ state: atSoakEnd.state, now: observeDeadline - 1, runtimes });
    assert.equal(before.state.phase, 'Soaking');
    assert.deepEqual(before.state.failures, []);
    assert.equal(before.wakeAt, observeDeadline, 'the clamp to now moves; the deadline does not');
    const at = plan({ state: before.state, now: observeDeadline, runtimes });
    assert.equal(at.state.wave, 1, 'rt-1 counted failed (one of two): the next wave starts');
    assert.deepEqual(at.events, ['advanced']);
    assert.ok(REST.every((id) => at.desired.get(id) === 'v2'));
    assert.deepEqual(at.rollback, []);
    // The next wave, like a laggard's, gives it its own deadline: observeFor after that wave soaked.
    const all = fleet('v2', { 'rt-1': { workloads: farFuture } });
    const last = plan({ state: at.state, now: observeDeadline + 1_000, runtimes: all });
    assert.equal(last.state.phase, 'Soaking');
    assert.equal(last.wakeAt, observeDeadline + 1_000 + OBSERVE);
    const done = plan({ state: last.state, now: observeDeadline + 1_000 + OBSERVE, runtimes: all });
    assert.equal(done.state.phase, 'Complete');
    assert.deepEqual(failedIds(done), ['rt-1']);
    assert.match(
      done.state.failures[0]?.reason ?? '',
      /^its Pods under set v2 were still under observation 120 s after the wave soaked \(first Pod reported at 2999-01-01T00:00:00\.000Z\)$/,
    );
  });

  test('a firstPodAt past what a date holds still fails at the deadline, its reason saying so', () => {
    const beyond = { pods: 1, failedPods: 0, firstPodAt: 1e300 };
    const runtimes = fleet('v1', { 'rt-1': { current: 'v2', workloads: beyond } }, ['rt-1']);
    const before = plan({ state: soaked, now: observeDeadline - 1, runtimes });
    assert.equal(before.state.phase, 'Soaking');
    const at = plan({ state: before.state, now: observeDeadline, runtimes });
    assert.equal(at.state.phase, 'Halted', 'the lone canary failed itself');
    assert.match(at.state.failures[0]?.reason ?? '', /\(first Pod reported at no valid time\)$/);
  });

  test('the same, walked pass by pass: the wave never stays in Soaking past the deadline', () => {
    const runtimes = fleet('v1', {
      'rt-1': { current: 'v2', workloads: farFuture },
      'rt-2': { current: 'v2' },
    });
    const { plan: end, at } = walk(runtimes, WAVE0, 0, 10 * DEADLINE);
    assert.ok(end);
    assert.equal(end.state.wave, 1);
    assert.ok(at !== undefined && at <= 10_000 + SOAK + OBSERVE + 10_000, `advanced at ${String(at)}`);
  });

  test('a lone canary with a far-future firstPodAt fails at the deadline too: its own wave halts, it does not hold', () => {
    const runtimes = fleet('v1', { 'rt-1': { current: 'v2', workloads: farFuture } }, ['rt-1']);
    const r = plan({ state: soaked, now: observeDeadline, runtimes });
    assert.equal(r.state.phase, 'Halted');
    assert.deepEqual(r.rollback, ['rt-1']);
  });

  test('honest Pods first seen before the soak ended finish their observation before the deadline', () => {
    const honest = { pods: 1, failedPods: 0, firstPodAt: SOAK }; // 1 s before the soak ended
    const runtimes = fleet('v1', { 'rt-1': { current: 'v2', workloads: honest }, 'rt-2': { current: 'v2' } });
    const waiting = plan({ state: soaked, now: 1_000 + SOAK, runtimes });
    assert.equal(waiting.wakeAt, SOAK + OBSERVE);
    const done = plan({ state: waiting.state, now: SOAK + OBSERVE, runtimes });
    assert.equal(done.state.wave, 1);
    assert.deepEqual(done.state.failures, [], 'nobody failed');
  });

  test('a runtime that never reports serving fails itself at the health deadline; with one of two the wave moves on', () => {
    const silent = {
      current: 'v2',
      health: 'pending' as const,
      reason: 'the webhook has not reported serving set v2 yet',
    };
    const runtimes = fleet('v1', { 'rt-1': { current: 'v2' }, 'rt-2': silent });
    const waiting = plan({ now: DEADLINE - 1, runtimes });
    assert.equal(waiting.state.phase, 'Progressing');
    assert.equal(waiting.wakeAt, DEADLINE);
    const late = plan({ state: waiting.state, now: DEADLINE, runtimes });
    assert.equal(late.state.phase, 'Soaking', 'rt-2 counted failed, rt-1 healthy: the soak starts');
    assert.deepEqual(failedIds(late), ['rt-2']);
    assert.match(
      late.state.failures[0]?.reason ?? '',
      /not healthy at v2 within 300 s: the webhook has not reported/,
    );
    const next = plan({ state: late.state, now: DEADLINE + SOAK, runtimes });
    assert.equal(next.state.wave, 1);
    assert.deepEqual(next.rollback, []);
  });
});

describe('preflight: one runtime’s findings do not halt a wave 0 of several', () => {
  const checking = (failed: boolean, done = true): Partial<RuntimeView> => ({
    followsPods: true,
    workloads: { pods: 0, failedPods: 0 },
    preflight: {
      set: 'v2',
      done,
      failed,
      ...(failed ? { detail: '1 missing, 0 refused of 1 checked' } : {}),
    },
  });
  const PREFLIGHT: RolloutState = { ...WAVE0, phase: 'Preflight' };

  test('default, wave 0 of two: one finding is recorded, wave 0 starts once both checked', () => {
    const running = plan({
      state: PREFLIGHT,
      runtimes: fleet('v1', { 'rt-1': checking(true), 'rt-2': checking(false, false) }),
    });
    assert.equal(running.state.phase, 'Preflight');
    assert.deepEqual(failedIds(running), ['rt-1']);
    assert.match(running.message, /images missing or refused on rt-1 \(a halt needs 2 runtimes\)/);
    const r = plan({
      state: running.state,
      runtimes: fleet('v1', { 'rt-1': checking(true), 'rt-2': checking(false) }),
    });
    assert.equal(r.state.phase, 'Progressing');
    assert.deepEqual(r.events, ['preflighted']);
    assert.equal(r.desired.get('rt-2'), 'v2');
  });

  test('default, wave 0 of two: both finding images missing halt', () => {
    const r = plan({
      state: PREFLIGHT,
      runtimes: fleet('v1', { 'rt-1': checking(true), 'rt-2': checking(true) }),
    });
    assert.equal(r.state.phase, 'Halted');
    assert.match(
      r.state.haltReason ?? '',
      /^preflight failed on 2 runtime\(s\) of wave canary \(minimum 2\)/,
    );
  });

  test('minFailedRuntimes 1: one finding halts, as before', () => {
    const r = plan({
      policy: { ...POLICY, minFailedRuntimes: 1 },
      state: PREFLIGHT,
      runtimes: fleet('v1', { 'rt-1': checking(true), 'rt-2': checking(false) }),
    });
    assert.equal(r.state.phase, 'Halted');
  });

  test('default, a one-runtime wave 0: its finding halts', () => {
    const r = plan({ state: PREFLIGHT, runtimes: fleet('v1', { 'rt-1': checking(true) }, ['rt-1']) });
    assert.equal(r.state.phase, 'Halted');
    assert.match(r.state.haltReason ?? '', /\(minimum 1\)/);
  });
});

describe('the policy field', () => {
  const resource = (spec: Record<string, unknown>) => ({
    metadata: { name: 'default' },
    spec: { waves: [{ name: 'canary', percent: 10 }], ...spec },
  });

  test('minFailedRuntimes defaults to 2; a value given is kept', () => {
    assert.equal(policyOf(resource({}), { autoRollback: true }).policy.minFailedRuntimes, 2);
    assert.equal(
      policyOf(resource({ minFailedRuntimes: 1 }), { autoRollback: true }).policy.minFailedRuntimes,
      1,
    );
    assert.equal(
      policyOf(resource({ minFailedRuntimes: 7 }), { autoRollback: true }).policy.minFailedRuntimes,
      7,
    );
    assert.equal(DEFAULT_ROLLOUT_POLICY.minFailedRuntimes, 2);
  });

  test('0, a negative or a fraction is refused, naming the field; the default policy is in force', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      const r = policyOf(resource({ minFailedRuntimes: bad }), { autoRollback: true });
      assert.match(r.problem ?? '', /minFailedRuntimes: a whole number of at least 1/, String(bad));
      assert.deepEqual(r.policy.waves, DEFAULT_ROLLOUT_POLICY.waves);
    }
  });
});
