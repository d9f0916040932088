import assert from 'node:assert/strict';
import { WORKLOAD_WATCH_MS } from '../../../../src/controller/direct/webhook-report.js';
import { describe, test } from 'node:test';
import {
  DEFAULT_MIN_FAILED_RUNTIMES,
  DEFAULT_ROLLOUT_POLICY,
  DEFAULT_WORKLOAD_GATE,
  type RolloutPolicy,
} from '../../../../src/controller/rollout/rollout-policy.js';
import { FAILURES_KEPT, type RolloutState } from '../../../../src/controller/rollout/rollout-state.js';
import {
  planRollout,
  type PlanInput,
  type RuntimeView,
} from '../../../../src/controller/rollout/wave-planner.js';
import { DONE_V1, runtimeViews, planInput } from '../../../support/wave-planner-inputs.js';

const CANARY = { matchLabels: { canary: 'true' } };
/** Canary (selector, 60 s soak), then the rest. */
const POLICY: RolloutPolicy = {
  waves: [{ name: 'canary', selector: CANARY, soakMs: 60_000 }],
  failureThreshold: 0,
  minFailedRuntimes: DEFAULT_MIN_FAILED_RUNTIMES,
  healthDeadlineMs: 300_000,
  autoRollback: true,
  workloads: DEFAULT_WORKLOAD_GATE,
};
const IDS = ['rt-1', 'rt-2', 'rt-3', 'rt-4', 'rt-5'];

/** The fleet on `current` for everyone, healthy, rt-1 labelled canary. */
function fleet(current: string, over: Record<string, Partial<RuntimeView>> = {}): RuntimeView[] {
  return runtimeViews(IDS, ['rt-1'], current, over);
}

const plan = (p: Partial<PlanInput>) => planRollout(planInput(POLICY, fleet('v1'), DONE_V1, p));

const desiredOf = (r: ReturnType<typeof planRollout>) => Object.fromEntries(r.desired);

/**
 * A rollout of v2 under POLICY with `over` and a canary wave that does not soak, once rt-1 (the
 * canary) runs v2 at 2 s: the policy and the state then.
 */
function pastUnsoakedCanary(over: Partial<RolloutPolicy>) {
  const policy = { ...POLICY, ...over, waves: [{ name: 'canary', selector: CANARY, soakMs: 0 }] };
  const first = plan({ policy }).state;
  const s = plan({
    policy,
    state: first,
    now: 2_000,
    runtimes: fleet('v1', { 'rt-1': { current: 'v2' } }),
  }).state;
  return { policy, s };
}

describe('wave planner', () => {
  test('no state yet: the target in force is adopted as healthy everywhere, nothing rolls', () => {
    const r = planRollout({
      policy: POLICY,
      runtimes: fleet('v1'),
      target: 'v1',
      state: undefined,
      now: 0,
      workloadWatchMs: WORKLOAD_WATCH_MS,
    });
    assert.deepEqual(
      r.state,
      { ...DONE_V1, wave: POLICY.waves.length + 1 },
      'as if a rollout of v1 had completed',
    );
    assert.deepEqual(r.events, ['adopted']);
    assert.ok([...r.desired.values()].every((v) => v === 'v1'));
  });

  test('a new target goes to the canary only; the rest keep the stable revision', () => {
    const r = plan({});
    assert.equal(r.state.phase, 'Progressing');
    assert.equal(r.state.wave, 0);
    assert.deepEqual(r.events, ['started']);
    assert.deepEqual(desiredOf(r), { 'rt-1': 'v2', 'rt-2': 'v1', 'rt-3': 'v1', 'rt-4': 'v1', 'rt-5': 'v1' });
    assert.match(r.message, /wave 1\/2 \(canary\): 0\/1 healthy at v2/);
  });

  test('wave n+1 never starts early: not while the canary is pending, not before its soak ends', () => {
    const started = plan({}).state;
    const pending = plan({
      state: started,
      now: 5_000,
      runtimes: fleet('v1', { 'rt-1': { current: 'v2', health: 'pending' } }),
    });
    assert.equal(pending.state.wave, 0);
    assert.equal(pending.desired.get('rt-2'), 'v1');
    const healthy = fleet('v1', { 'rt-1': { current: 'v2' } });
    const soaking = plan({ state: pending.state, now: 10_000, runtimes: healthy });
    assert.equal(soaking.state.phase, 'Soaking');
    assert.equal(soaking.state.healthySince, 10_000);
    assert.equal(soaking.desired.get('rt-2'), 'v1');
    const stillSoaking = plan({ state: soaking.state, now: 69_999, runtimes: healthy });
    assert.equal(stillSoaking.state.wave, 0);
    const next = plan({ state: stillSoaking.state, now: 70_000, runtimes: healthy });
    assert.equal(next.state.wave, 1);
    assert.deepEqual(next.events, ['advanced']);
    assert.ok(IDS.every((id) => next.desired.get(id) === 'v2'));
  });

  test('a regression during the soak restarts it', () => {
    const soaking = plan({
      state: plan({}).state,
      now: 10_000,
      runtimes: fleet('v1', { 'rt-1': { current: 'v2' } }),
    });
    const blip = plan({
      state: soaking.state,
      now: 20_000,
      runtimes: fleet('v1', { 'rt-1': { current: 'v2', health: 'pending' } }),
    });
    assert.equal(blip.state.phase, 'Progressing');
    assert.equal(blip.state.healthySince, undefined);
    const again = plan({
      state: blip.state,
      now: 75_000,
      runtimes: fleet('v1', { 'rt-1': { current: 'v2' } }),
    });
    assert.equal(again.state.phase, 'Soaking', 'the soak counts again from 75 s');
  });

  test('the whole rollout completes: the target becomes the stable revision', () => {
    let s = plan({}).state;
    s = plan({ state: s, now: 2_000, runtimes: fleet('v1', { 'rt-1': { current: 'v2' } }) }).state;
    s = plan({ state: s, now: 62_000, runtimes: fleet('v1', { 'rt-1': { current: 'v2' } }) }).state;
    assert.equal(s.wave, 1);
    const done = plan({ state: s, now: 63_000, runtimes: fleet('v2') });
    assert.equal(done.state.phase, 'Complete');
    assert.equal(done.state.stable, 'v2');
    assert.deepEqual(done.events, ['advanced', 'completed']);
  });

  test('a refusal over the threshold halts at the canary and rolls the canary back, nothing else touched', () => {
    const refused = fleet('v1', {
      'rt-1': { current: 'v2', health: 'failed', reason: 'webhook refused v2' },
    });
    const r = plan({ state: plan({}).state, now: 3_000, runtimes: refused });
    assert.equal(r.state.phase, 'Halted');
    assert.deepEqual(r.events, ['halted']);
    assert.match(
      r.state.haltReason ?? '',
      /1 runtime\(s\) failed in wave canary \(threshold 0, minimum 1\); rt-1: webhook refused v2/,
    );
    assert.deepEqual(r.state.failures, [{ id: 'rt-1', reason: 'webhook refused v2' }]);
    assert.deepEqual(r.rollback, ['rt-1']);
    assert.ok(IDS.every((id) => r.desired.get(id) === 'v1'));
    // It stays halted on later passes, with the canary back on v1.
    const later = plan({ state: r.state, now: 400_000, runtimes: fleet('v1') });
    assert.equal(later.state.phase, 'Halted');
    assert.deepEqual(later.rollback, []);
  });

  test('--no-auto-rollback only halts: the canary keeps the target, nobody else gets it', () => {
    const policy = { ...POLICY, autoRollback: false };
    const refused = fleet('v1', { 'rt-1': { current: 'v2', health: 'failed', reason: 'refused' } });
    const r = plan({ policy, state: plan({ policy }).state, now: 3_000, runtimes: refused });
    assert.equal(r.state.phase, 'Halted');
    assert.deepEqual(r.rollback, []);
    assert.deepEqual(desiredOf(r), { 'rt-1': 'v2', 'rt-2': 'v1', 'rt-3': 'v1', 'rt-4': 'v1', 'rt-5': 'v1' });
  });

  test('failures within the threshold do not halt', () => {
    const policy = { ...POLICY, failureThreshold: 1 };
    const refused = fleet('v1', { 'rt-1': { current: 'v2', health: 'failed', reason: 'refused' } });
    const r = plan({ policy, state: plan({ policy }).state, now: 3_000, runtimes: refused });
    assert.notEqual(r.state.phase, 'Halted');
    assert.deepEqual(
      r.state.failures.map((f) => f.id),
      ['rt-1'],
    );
  });

  test('an unreachable runtime counts against the threshold after the deadline and never blocks forever', () => {
    const { policy, s } = pastUnsoakedCanary({ failureThreshold: 1 });
    assert.equal(s.wave, 1, 'the canary wave passed');
    const oneDown = fleet('v2', { 'rt-3': { current: 'v1', health: 'pending', reason: 'unreachable' } });
    const waiting = plan({ policy, state: s, now: 2_000 + 299_999, runtimes: oneDown });
    assert.equal(waiting.state.phase, 'Progressing', 'before the deadline it is only pending');
    assert.deepEqual(waiting.state.failures, []);
    const past = plan({ policy, state: waiting.state, now: 2_000 + 300_000, runtimes: oneDown });
    assert.equal(past.state.phase, 'Complete', 'counted failed within the threshold: the rollout ends');
    // With no tolerance and one runtime enough, the same runtime halts the rollout at the deadline.
    const strict = { ...policy, failureThreshold: 0, minFailedRuntimes: 1 };
    const halted = plan({ policy: strict, state: waiting.state, now: 2_000 + 300_000, runtimes: oneDown });
    assert.equal(halted.state.phase, 'Halted');
    assert.match(halted.state.haltReason ?? '', /rt-3: not healthy at v2 within 300 s: unreachable/);
  });

  test('a runtime created mid-rollout gets the stable revision unless its wave started', () => {
    const s = plan({}).state;
    const newcomers = [
      ...fleet('v1'),
      { id: 'rt-new', labels: {}, health: 'pending' as const },
      { id: 'rt-new-canary', labels: { canary: 'true' }, health: 'pending' as const },
    ];
    const r = plan({ state: s, now: 2_000, runtimes: newcomers });
    assert.equal(r.desired.get('rt-new'), 'v1');
    assert.equal(r.desired.get('rt-new-canary'), 'v2');
  });

  test('resume: a new annotation value resumes the halted wave once; the same value again does nothing', () => {
    const refused = fleet('v1', { 'rt-1': { current: 'v2', health: 'failed', reason: 'refused' } });
    const halted = plan({ state: plan({}).state, now: 3_000, runtimes: refused }).state;
    const resumed = plan({ state: halted, now: 4_000, runtimes: fleet('v1'), resumeToken: 'a' });
    assert.deepEqual(resumed.events, ['resumed']);
    assert.equal(resumed.state.phase, 'Progressing');
    assert.equal(resumed.state.waveStartedAt, 4_000);
    assert.equal(resumed.desired.get('rt-1'), 'v2');
    const againHalted = plan({ state: resumed.state, now: 5_000, runtimes: refused, resumeToken: 'a' });
    assert.equal(againHalted.state.phase, 'Halted', 'the same token does not resume twice');
    const stillHalted = plan({
      state: againHalted.state,
      now: 6_000,
      runtimes: fleet('v1'),
      resumeToken: 'a',
    });
    assert.equal(stillHalted.state.phase, 'Halted');
  });

  test('a new change resumes a halted rollout from the first wave, keeping the stable revision', () => {
    const refused = fleet('v1', { 'rt-1': { current: 'v2', health: 'failed', reason: 'refused' } });
    const halted = plan({ state: plan({}).state, now: 3_000, runtimes: refused }).state;
    const fixed = plan({ state: halted, target: 'v3', now: 9_000, runtimes: fleet('v1') });
    assert.deepEqual(fixed.events, ['started']);
    assert.equal(fixed.state.stable, 'v1');
    assert.equal(fixed.state.wave, 0);
    assert.equal(fixed.desired.get('rt-1'), 'v3');
    assert.equal(fixed.desired.get('rt-2'), 'v1');
  });

  test('a change mid-rollout starts over at the canary, the stable revision unchanged', () => {
    let s = plan({ policy: { ...POLICY, waves: [{ name: 'canary', selector: CANARY, soakMs: 0 }] } }).state;
    s = plan({ state: s, now: 2_000, runtimes: fleet('v1', { 'rt-1': { current: 'v2' } }) }).state;
    const r = plan({
      state: s,
      target: 'v3',
      now: 3_000,
      runtimes: fleet('v1', { 'rt-1': { current: 'v2' } }),
    });
    assert.equal(r.state.stable, 'v1');
    assert.equal(r.desired.get('rt-1'), 'v3');
    assert.equal(r.desired.get('rt-2'), 'v1');
  });

  test('paused or deleted runtimes are in no wave and never block', () => {
    const runtimes = fleet('v1', {
      'rt-1': { current: 'v2' },
      'rt-2': { excluded: true, health: 'pending' },
    });
    const policy = { ...POLICY, waves: [{ name: 'canary', selector: CANARY, soakMs: 0 }] };
    let s = plan({ policy }).state;
    s = plan({ policy, state: s, now: 2_000, runtimes }).state;
    const all = fleet('v2', { 'rt-2': { current: 'v1', excluded: true, health: 'pending' } });
    const done = plan({ policy, state: s, now: 3_000, runtimes: all });
    assert.equal(done.state.phase, 'Complete');
  });

  test('an earlier wave regressing during a later one halts too', () => {
    const { policy, s } = pastUnsoakedCanary({ minFailedRuntimes: 1 });
    assert.equal(s.wave, 1);
    const r = plan({
      policy,
      state: s,
      now: 3_000,
      runtimes: fleet('v1', { 'rt-1': { current: 'v2', health: 'failed', reason: 'refused' } }),
    });
    assert.equal(r.state.phase, 'Halted');
    assert.deepEqual(r.rollback, ['rt-1']);
  });

  test("the default policy is today's behaviour: every runtime gets the target at once, nothing halts", () => {
    const refused = fleet('v1', { 'rt-1': { current: 'v2', health: 'failed', reason: 'refused' } });
    const s = planRollout({
      policy: DEFAULT_ROLLOUT_POLICY,
      runtimes: fleet('v1'),
      target: 'v2',
      state: DONE_V1,
      now: 0,
      workloadWatchMs: WORKLOAD_WATCH_MS,
    });
    assert.ok(IDS.every((id) => s.desired.get(id) === 'v2'));
    const r = planRollout({
      policy: DEFAULT_ROLLOUT_POLICY,
      runtimes: refused,
      target: 'v2',
      state: s.state,
      now: 1,
      workloadWatchMs: WORKLOAD_WATCH_MS,
    });
    assert.notEqual(r.state.phase, 'Halted');
    assert.ok(IDS.every((id) => r.desired.get(id) === 'v2'));
  });

  test('deterministic: a restart (same state, same inputs) plans the same', () => {
    const s = plan({}).state;
    const runtimes = fleet('v1', { 'rt-1': { current: 'v2' } });
    const a = plan({ state: s, now: 5_000, runtimes });
    const b = plan({
      state: JSON.parse(JSON.stringify(s)) as RolloutState,
      now: 5_000,
      runtimes: [...runtimes].reverse(),
    });
    assert.deepEqual(a.state, b.state);
    assert.deepEqual(desiredOf(a), desiredOf(b));
  });

  test('an empty wave still soaks, then passes', () => {
    const policy: RolloutPolicy = {
      ...POLICY,
      waves: [
        { name: 'nobody', selector: { matchLabels: { tier: 'none' } }, soakMs: 60_000 },
        { name: 'canary', selector: CANARY, soakMs: 0 },
      ],
    };
    const r = plan({ policy });
    assert.equal(r.state.wave, 0, 'an empty wave with a soak still soaks (its runtimes were all healthy)');
    const later = plan({ policy, state: r.state, now: 61_000 });
    assert.equal(later.state.wave, 1);
    assert.equal(later.desired.get('rt-1'), 'v2');
  });
  test('wakeAt: when the soak ends or the health deadline passes; nothing while halted or complete', () => {
    const started = plan({});
    assert.equal(started.wakeAt, 1_000 + POLICY.healthDeadlineMs, 'the wave may fail by its deadline');
    const healthy = fleet('v1', { 'rt-1': { current: 'v2' } });
    const soaking = plan({ state: started.state, now: 10_000, runtimes: healthy });
    assert.equal(soaking.wakeAt, 70_000, 'the soak ends 60 s after the canary was healthy');
    // Woken then: the next wave starts, and its own deadline is the next moment.
    const next = plan({ state: soaking.state, now: 70_000, runtimes: healthy });
    assert.equal(next.state.wave, 1);
    assert.equal(next.wakeAt, 70_000 + POLICY.healthDeadlineMs);
    const pending = fleet('v1', { 'rt-1': { current: 'v2', health: 'pending' } });
    const late = plan({ state: started.state, now: 1_000 + POLICY.healthDeadlineMs - 1, runtimes: pending });
    assert.equal(late.state.phase, 'Progressing');
    assert.equal(late.wakeAt, 1_000 + POLICY.healthDeadlineMs);
    const halted = plan({ state: late.state, now: 1_000 + POLICY.healthDeadlineMs, runtimes: pending });
    assert.equal(halted.state.phase, 'Halted', 'woken at the deadline, the pending canary fails');
    assert.equal(halted.wakeAt, undefined);
    assert.equal(plan({ state: DONE_V1, target: 'v1' }).wakeAt, undefined);
  });

  test('the message says where the rollout stands: progressing, soaking, halted, complete', () => {
    const started = plan({});
    assert.equal(started.message, 'progressing, wave 1/2 (canary): 0/1 healthy at v2');
    const healthy = fleet('v1', { 'rt-1': { current: 'v2' } });
    const soaking = plan({ state: started.state, now: 10_000, runtimes: healthy });
    assert.equal(soaking.message, 'soaking, wave 1/2 (canary): 1/1 healthy at v2');
    const rest = plan({ state: soaking.state, now: 70_000, runtimes: healthy });
    assert.equal(rest.message, 'progressing, wave 2/2 (rest): 1/5 healthy at v2');
    const done = plan({ state: rest.state, now: 71_000, runtimes: fleet('v2') });
    assert.equal(done.message, 'complete: v2 on every wave');
    const refused = fleet('v1', { 'rt-1': { current: 'v2', health: 'failed', reason: 'refused' } });
    const halted = plan({ state: started.state, now: 2_000, runtimes: refused });
    assert.equal(halted.message, `halted: ${halted.state.haltReason ?? ''}`);
    assert.match(halted.message, /^halted: 1 runtime\(s\) failed in wave canary/);
  });

  test('failures: sorted by runtime, a refusal without a reason says failed, a laggard without one says only the deadline, at most FAILURES_KEPT kept', () => {
    const many = Array.from({ length: FAILURES_KEPT + 5 }, (_, i) => ({
      id: `rt-${String(FAILURES_KEPT + 5 - i).padStart(3, '0')}`,
      labels: { canary: 'true' },
      current: 'v2',
      health: 'failed' as const,
    }));
    const policy = { ...POLICY, failureThreshold: 1_000 };
    const r = plan({ policy, state: plan({ policy, runtimes: many }).state, now: 2_000, runtimes: many });
    assert.notEqual(r.state.phase, 'Halted');
    assert.equal(r.state.failures.length, FAILURES_KEPT);
    const ids = r.state.failures.map((f) => f.id);
    assert.deepEqual(ids, [...ids].sort());
    assert.equal(ids[0], 'rt-001');
    assert.ok(r.state.failures.every((f) => f.reason === 'failed'));
    const strict = plan({ state: plan({ runtimes: many }).state, now: 2_000, runtimes: many });
    assert.equal(strict.state.phase, 'Halted');
    assert.equal(strict.state.failures.length, FAILURES_KEPT, 'a halt keeps as few');
    assert.match(
      strict.state.haltReason ?? '',
      /^25 runtime\(s\) failed in wave canary \(threshold 0, minimum 2\); rt-001: failed$/,
    );
    const lagging = fleet('v1', { 'rt-1': { current: 'v1', health: 'pending' } });
    const late = plan({ state: plan({}).state, now: 1_000 + POLICY.healthDeadlineMs, runtimes: lagging });
    assert.deepEqual(late.state.failures, [{ id: 'rt-1', reason: 'not healthy at v2 within 300 s' }]);
  });

  test('a runtime that failed on an older revision is pending, not failed, until the deadline', () => {
    const broken = fleet('v1', { 'rt-1': { health: 'failed', reason: 'broken before' } });
    const r = plan({ state: plan({}).state, now: 2_000, runtimes: broken });
    assert.equal(r.state.phase, 'Progressing');
    assert.deepEqual(r.state.failures, []);
    const late = plan({ state: r.state, now: 1_000 + POLICY.healthDeadlineMs, runtimes: broken });
    assert.deepEqual(late.state.failures, [
      { id: 'rt-1', reason: 'not healthy at v2 within 300 s: broken before' },
    ]);
  });

  test('a paused runtime keeps the stable revision even in a wave that started', () => {
    const runtimes = fleet('v1', { 'rt-1': { current: 'v2' }, 'rt-2': { excluded: true } });
    const policy = { ...POLICY, waves: [{ name: 'canary', selector: CANARY, soakMs: 0 }] };
    const r = plan({ policy, state: plan({ policy }).state, now: 2_000, runtimes });
    assert.equal(r.state.wave, 1, 'the last wave started');
    assert.equal(r.desired.get('rt-3'), 'v2');
    assert.equal(r.desired.get('rt-2'), 'v1');
  });

  test('the message counts the runtimes of every wave started so far', () => {
    const policy: RolloutPolicy = {
      ...POLICY,
      waves: [
        { name: 'canary', selector: CANARY, soakMs: 0 },
        { name: 'pair', selector: { matchLabels: { pair: 'true' } }, soakMs: 0 },
      ],
    };
    const runtimes = fleet('v1', {
      'rt-1': { current: 'v2' },
      'rt-2': { labels: { pair: 'true' } },
      'rt-3': { labels: { pair: 'true' } },
    });
    const r = plan({ policy, state: plan({ policy }).state, now: 2_000, runtimes });
    assert.equal(r.state.wave, 1);
    assert.equal(r.message, 'progressing, wave 2/3 (pair): 1/3 healthy at v2');
  });

  test('while soaking, the wake-up is the soak’s end counted from when the wave was healthy, not from now', () => {
    const healthy = fleet('v1', { 'rt-1': { current: 'v2' } });
    const soaking = plan({ state: plan({}).state, now: 10_000, runtimes: healthy });
    const later = plan({ state: soaking.state, now: 30_000, runtimes: healthy });
    assert.equal(later.state.phase, 'Soaking');
    assert.equal(later.wakeAt, 70_000);
    const halted = plan({
      state: soaking.state,
      now: 30_000,
      runtimes: fleet('v1', { 'rt-1': { current: 'v2', health: 'failed' } }),
    });
    assert.equal(halted.wakeAt, undefined, 'no wake-up at all');
  });

  test('failures are capped while a wave waits and when it passes', () => {
    const many = Array.from({ length: FAILURES_KEPT + 5 }, (_, i) => ({
      id: `rt-${String(i).padStart(3, '0')}`,
      current: 'v2',
      health: 'failed' as const,
    }));
    const waiting = [...many, { id: 'rt-pending', health: 'pending' as const }];
    const policy: RolloutPolicy = { ...POLICY, waves: [], failureThreshold: 1_000 };
    const started = plan({ policy, runtimes: waiting }).state;
    const r = plan({ policy, state: started, now: 2_000, runtimes: waiting });
    assert.equal(r.state.phase, 'Progressing');
    assert.equal(r.state.failures.length, FAILURES_KEPT);
    const done = plan({ policy, state: started, now: 2_000, runtimes: many });
    assert.equal(done.state.phase, 'Complete');
    assert.equal(done.state.failures.length, FAILURES_KEPT);
  });

  test('a resumed wave starts with no failures, and a token seen once never resumes again, not even across a new target', () => {
    const refused = fleet('v1', { 'rt-1': { current: 'v2', health: 'failed', reason: 'refused' } });
    const pending = fleet('v1', { 'rt-1': { current: 'v1', health: 'pending' } });
    const halted = plan({ state: plan({}).state, now: 3_000, runtimes: refused }).state;
    assert.equal(halted.failures.length, 1);
    const resumed = plan({ state: halted, now: 4_000, runtimes: pending, resumeToken: 'a' });
    assert.deepEqual(resumed.state.failures, []);
    assert.equal(resumed.state.resumeToken, 'a');
    // A new target keeps the token it has seen: halting again, the same value does not resume.
    const next = plan({
      state: resumed.state,
      target: 'v3',
      now: 5_000,
      runtimes: pending,
      resumeToken: 'a',
    });
    assert.equal(next.state.resumeToken, 'a');
    // Also while the annotation is gone: the token seen is remembered, not the annotation.
    const unset = plan({ state: resumed.state, target: 'v3', now: 5_000, runtimes: pending });
    assert.equal(unset.state.resumeToken, 'a');
    const haltedUnset = plan({ state: halted, now: 4_000, runtimes: pending });
    assert.equal(haltedUnset.state.phase, 'Halted', 'no annotation resumes nothing');
    assert.equal(haltedUnset.state.resumeToken, undefined);
    const refusedV3 = fleet('v1', { 'rt-1': { current: 'v3', health: 'failed', reason: 'refused' } });
    const haltedV3 = plan({
      state: next.state,
      target: 'v3',
      now: 6_000,
      runtimes: refusedV3,
      resumeToken: 'a',
    });
    assert.equal(haltedV3.state.phase, 'Halted');
    assert.deepEqual(haltedV3.events, ['halted']);
    // A token set while nothing is halted is taken as seen: it does not resume a later halt.
    const early = plan({ state: plan({}).state, now: 2_000, runtimes: pending, resumeToken: 'b' });
    assert.deepEqual(early.events, []);
    assert.equal(early.state.resumeToken, 'b');
    const haltedLater = plan({ state: early.state, now: 3_000, runtimes: refused, resumeToken: 'b' });
    assert.equal(haltedLater.state.phase, 'Halted');
  });
});
