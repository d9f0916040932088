import assert from 'node:assert/strict';
import { WORKLOAD_WATCH_MS } from '../../../../src/controller/direct/webhook-report.js';
import { describe, test } from 'node:test';
import type { RolloutDecisionResource } from '../../../../src/api/rollout-decision.js';
import { buildSyncSet, type SyncSet } from '../../../../src/controller/direct/sync-set.js';
import {
  decisionsOf,
  NO_DECISIONS,
  resumeTokenOf,
  type Decisions,
} from '../../../../src/controller/rollout/decisions.js';
import { fleetStatus, formatFleetStatus } from '../../../../src/controller/rollout/fleet-status.js';
import { stateOf, statusOf } from '../../../../src/controller/rollout/policy-resource.js';
import {
  DEFAULT_MIN_FAILED_RUNTIMES,
  DEFAULT_WORKLOAD_GATE,
  type RolloutPolicy,
} from '../../../../src/controller/rollout/rollout-policy.js';
import type { RolloutPhase, RolloutState } from '../../../../src/controller/rollout/rollout-state.js';
import { changesBetween } from '../../../../src/controller/rollout/source-changes.js';
import {
  planRollout,
  type PlanInput,
  type RolloutPlan,
  type RuntimeView,
} from '../../../../src/controller/rollout/wave-planner.js';
import { seedConfigText, syncSources } from '../../../support/fixtures.js';
import { runtimeViews, WAVE0 } from '../../../support/wave-planner-inputs.js';

const CANARY = { matchLabels: { canary: 'true' } };
const IDS = ['rt-1', 'rt-2', 'rt-3', 'rt-4', 'rt-5'];
/** Canary (no soak), then `early` (every other runtime) behind an approval for new pull credentials. */
const POLICY: RolloutPolicy = {
  waves: [
    { name: 'canary', selector: CANARY, soakMs: 0 },
    { name: 'early', percent: 100, soakMs: 0, approval: { sources: ['pullCredentials'] } },
  ],
  failureThreshold: 0,
  minFailedRuntimes: DEFAULT_MIN_FAILED_RUNTIMES,
  healthDeadlineMs: 300_000,
  autoRollback: true,
  // No Pods to observe: a healthy runtime is healthy at once.
  workloads: { ...DEFAULT_WORKLOAD_GATE, observeForMs: 0 },
};

const fleet = (over: Record<string, Partial<RuntimeView>> = {}) => runtimeViews(IDS, ['rt-1'], 'v1', over);
/** The canary on v2, healthy; the rest on v1. */
const CANARY_ON_V2 = fleet({ 'rt-1': { current: 'v2' } });
const ALICE = { by: 'alice', at: Date.parse('2026-12-02T10:00:00Z'), name: 'default.approve.1' };
const BOB = { by: 'bob', at: Date.parse('2026-12-02T11:00:00Z'), name: 'default.reject.1' };
const CAROL = { by: 'carol', at: Date.parse('2026-12-02T12:00:00Z'), name: 'default.pause.1' };

const base: RolloutState = { ...WAVE0, changes: ['pullCredentials'] };

const plan = (p: Partial<PlanInput>): RolloutPlan =>
  planRollout({
    policy: POLICY,
    runtimes: CANARY_ON_V2,
    target: 'v2',
    state: base,
    now: 60_000,
    workloadWatchMs: WORKLOAD_WATCH_MS,
    ...p,
  });

/** A state of each phase, as a rollout of v2 with new pull credentials would store it. */
const STATES: Record<RolloutPhase, RolloutState> = {
  // Wave 0 checks the images; the canary reports no workloads, so it is not waited for past 30 s.
  Preflight: { ...base, phase: 'Preflight' },
  Progressing: base,
  Soaking: { ...base, phase: 'Soaking', healthySince: 1_000 },
  AwaitingApproval: { ...base, phase: 'AwaitingApproval', wave: 1, waveStartedAt: 5_000 },
  Paused: { ...base, phase: 'Paused', wave: 1, waveStartedAt: 5_000 },
  Halted: { ...base, phase: 'Halted', wave: 1, haltReason: 'earlier' },
  Complete: { ...base, stable: 'v2', wave: 2, phase: 'Complete' },
};

const DECISIONS: Record<string, Decisions> = {
  none: NO_DECISIONS,
  approved: { approvals: [{ ...ALICE, wave: 'early' }] },
  rejected: { approvals: [], rejected: BOB },
  paused: { approvals: [], paused: CAROL },
  'paused and approved': { approvals: [{ ...ALICE, wave: 'early' }], paused: CAROL },
};

type Outcomes = Record<string, [RolloutPhase, number]>;

/** Wave 1 next or waiting for its approval: a rejection halts at `haltedAt`, a pause holds wave 1. */
const towardWave1 = (haltedAt: number): Outcomes => ({
  none: ['AwaitingApproval', 1],
  approved: ['Progressing', 1],
  rejected: ['Halted', haltedAt],
  paused: ['Paused', 1],
  'paused and approved': ['Paused', 1],
});

/** A phase no decision moves: every decision leaves `phase` at `wave`. */
const unmoved = (phase: RolloutPhase, wave: number): Outcomes =>
  Object.fromEntries(Object.keys(DECISIONS).map((name) => [name, [phase, wave]]));

/** Where each phase goes with each decision: phase and wave after the pass. */
const EXPECTED: Record<RolloutPhase, Outcomes> = {
  // The preflight done, wave 0 starts; its canary already healthy, wave 1 is next.
  Preflight: {
    none: ['AwaitingApproval', 1],
    approved: ['Progressing', 1],
    rejected: ['Halted', 0],
    paused: ['Paused', 0],
    'paused and approved': ['Paused', 0],
  },
  // The canary is healthy and does not soak: wave 1 is next, and it asks for an approval.
  Progressing: towardWave1(0),
  Soaking: towardWave1(0),
  AwaitingApproval: towardWave1(1),
  Paused: towardWave1(1),
  Halted: unmoved('Halted', 1),
  Complete: unmoved('Complete', 2),
};

/** Whether runtime `id`'s wave has started under `state` (a waiting wave has not). */
function started(p: RolloutPlan, id: string): boolean {
  const wave = p.waves.get(id) ?? POLICY.waves.length;
  const s = p.state;
  if (s.phase === 'Preflight' || s.phase === 'Halted') return false;
  return s.phase === 'AwaitingApproval' || s.phase === 'Paused' ? wave < s.wave : wave <= s.wave;
}

describe('approval gate of the wave planner', () => {
  for (const [phase, byDecision] of Object.entries(EXPECTED) as [RolloutPhase, Outcomes][])
    for (const [name, [wantPhase, wantWave]] of Object.entries(byDecision))
      test(`${phase}, decisions ${name}: ${wantPhase} at wave ${wantWave}`, () => {
        const decisions = DECISIONS[name];
        assert.ok(decisions);
        const r = plan({ state: STATES[phase], decisions });
        assert.equal(r.state.phase, wantPhase, r.message);
        assert.equal(r.state.wave, wantWave, r.message);
        // Nobody whose wave has not started (or waits) is given the target, in any phase.
        for (const id of IDS)
          if (!started(r, id) && r.state.phase !== 'Complete')
            assert.equal(r.desired.get(id), 'v1', `${id} must not have v2 (${wantPhase})`);
        // A waiting wave says what it waits for; nothing else waits.
        if (wantPhase === 'AwaitingApproval' || wantPhase === 'Paused') {
          assert.equal(r.awaiting?.wave, POLICY.waves[wantWave]?.name);
          assert.equal(r.awaiting?.paused, wantPhase === 'Paused');
          assert.equal(r.awaiting.approval, wantWave === 1 && (name === 'none' || name === 'paused'));
        } else assert.equal(r.awaiting, undefined);
        // A wave that starts by an approval records who gave it and when; nothing else does.
        const approvedNow = wantPhase === 'Progressing' && wantWave === 1;
        assert.deepEqual(
          (r.state.decisions ?? []).filter((d) => d.decision === 'Approved'),
          approvedNow ? [{ wave: 'early', decision: 'Approved', ...ALICE }] : [],
        );
        assert.equal(r.events.includes('approved'), approvedNow);
      });

  test('a wave that waits keeps the waves before it: the canary keeps the target, nobody else gets it', () => {
    const r = plan({});
    assert.equal(r.state.phase, 'AwaitingApproval');
    assert.deepEqual(r.events, ['advanced', 'awaiting']);
    assert.equal(r.desired.get('rt-1'), 'v2');
    assert.deepEqual(r.rollback, []);
    assert.equal(r.watch.size, 0, 'a wait may last days: its runtimes are read at rest');
    assert.match(
      r.message,
      /wave 2\/3 \(early\) waits since .*: awaiting approval of v2 \(it changes pullCredentials\)/,
    );
    // The next pass waits on, with no new event, from when the wait began.
    const again = plan({ state: r.state, now: 90_000 });
    assert.deepEqual(again.events, []);
    assert.equal(again.state.waveStartedAt, 60_000);
  });

  test('the approval is for the target: once recorded, the wave goes on without the decision', () => {
    const waiting = plan({}).state;
    const approved = plan({ state: waiting, now: 70_000, decisions: DECISIONS.approved });
    assert.equal(approved.state.waveStartedAt, 70_000, 'the health deadline counts from the start');
    assert.ok(IDS.every((id) => approved.desired.get(id) === 'v2'));
    const later = plan({
      state: approved.state,
      now: 80_000,
      runtimes: fleet({ 'rt-1': { current: 'v2' }, 'rt-2': { current: 'v2', health: 'pending' } }),
    });
    assert.equal(later.state.phase, 'Progressing');
    assert.deepEqual(later.events, []);
  });

  test('only the sources a gate names ask for it; a gate without sources, or changes not known, always do', () => {
    const gated = (sources: RolloutPolicy['waves'][number]['approval'], changes: RolloutState['changes']) => {
      const policy: RolloutPolicy = {
        ...POLICY,
        waves: [
          POLICY.waves[0] ?? { name: 'canary', soakMs: 0 },
          { name: 'early', percent: 100, soakMs: 0, ...(sources ? { approval: sources } : {}) },
        ],
      };
      const { changes: _c, ...rest } = base;
      return plan({ policy, state: changes === undefined ? rest : { ...rest, changes } }).state.phase;
    };
    assert.equal(gated({ sources: ['pullCredentials'] }, ['trustBundle']), 'Progressing');
    assert.equal(
      gated({ sources: ['pullCredentials'] }, ['overrides', 'pullCredentials']),
      'AwaitingApproval',
    );
    assert.equal(gated({ sources: ['pullCredentials'] }, undefined), 'AwaitingApproval');
    assert.equal(gated({}, []), 'AwaitingApproval');
    assert.equal(gated(undefined, ['pullCredentials']), 'Progressing');
  });

  test('a new target keeps what it changes; its first wave waits when it asks for an approval', () => {
    const policy: RolloutPolicy = {
      ...POLICY,
      waves: [{ name: 'canary', selector: CANARY, soakMs: 0, approval: {} }],
    };
    const done: RolloutState = { ...base, stable: 'v1', target: 'v1', wave: 2, phase: 'Complete' };
    const r = planRollout({
      policy,
      runtimes: fleet(),
      target: 'v2',
      state: done,
      now: 1_000,
      workloadWatchMs: WORKLOAD_WATCH_MS,
      changes: ['trustBundle'],
    });
    assert.equal(r.state.phase, 'AwaitingApproval');
    assert.equal(r.state.wave, 0);
    assert.deepEqual(r.state.changes, ['trustBundle']);
    assert.deepEqual(r.events, ['started', 'awaiting']);
    assert.ok(IDS.every((id) => r.desired.get(id) === 'v1'));
  });

  test('a rejection halts and rolls back like a halt, and names who rejected', () => {
    const waiting = plan({}).state;
    const r = plan({
      state: waiting,
      now: 70_000,
      decisions: { approvals: [], rejected: { ...BOB, reason: 'not today' } },
    });
    assert.equal(r.state.phase, 'Halted');
    assert.deepEqual(r.events, ['rejected', 'halted']);
    assert.deepEqual(r.rollback, ['rt-1']);
    assert.equal(r.desired.get('rt-1'), 'v1');
    assert.equal(
      r.state.haltReason,
      'rejected by bob at 2026-12-02T11:00:00.000Z (RolloutDecision default.reject.1): not today',
    );
    assert.deepEqual(r.state.decisions, [{ wave: 'early', decision: 'Rejected', ...BOB }]);
    // Without auto rollback, it only halts.
    const kept = plan({
      policy: { ...POLICY, autoRollback: false },
      state: waiting,
      decisions: DECISIONS.rejected,
    });
    assert.deepEqual(kept.rollback, []);
    assert.equal(kept.desired.get('rt-1'), 'v2');
  });

  test('a resume after a rejection starts the rejected wave through its gate again', () => {
    const rejected = plan({ state: plan({}).state, decisions: DECISIONS.rejected }).state;
    const resumed = plan({
      state: rejected,
      now: 80_000,
      resumeToken: resumeTokenOf(undefined, 'default.resume.1'),
    });
    assert.deepEqual(resumed.events, ['resumed', 'awaiting']);
    assert.equal(resumed.state.phase, 'AwaitingApproval');
    assert.equal(resumed.state.haltReason, undefined);
  });

  test('the started waves still halt the rollout while a wave waits', () => {
    const waiting = { ...plan({}).state, failures: [] };
    const refused = fleet({ 'rt-1': { current: 'v2', health: 'failed', reason: 'webhook refused v2' } });
    const r = plan({
      state: waiting,
      now: 70_000,
      runtimes: refused,
      policy: { ...POLICY, minFailedRuntimes: 1 },
    });
    assert.equal(r.state.phase, 'Halted');
    assert.match(r.state.haltReason ?? '', /failed in wave canary .*rt-1: webhook refused v2/);
  });

  test('a pause holds the next wave, the wave under way goes on; a resume lets it start', () => {
    const soaking = plan({
      state: { ...base, wave: 0 },
      decisions: DECISIONS.paused,
      runtimes: fleet({ 'rt-1': { current: 'v2', health: 'pending' } }),
    });
    assert.equal(soaking.state.phase, 'Progressing', 'the canary wave under way goes on');
    assert.equal(soaking.desired.get('rt-1'), 'v2');
    const held = plan({ state: soaking.state, now: 70_000, decisions: DECISIONS.paused });
    assert.equal(held.state.phase, 'Paused');
    assert.deepEqual(held.events, ['advanced', 'paused']);
    assert.match(held.message, /paused by carol at 2026-12-02T12:00:00.000Z/);
    const go = plan({ state: held.state, now: 80_000, decisions: DECISIONS.approved });
    assert.deepEqual(go.events, ['unpaused', 'approved']);
    assert.equal(go.state.phase, 'Progressing');
  });
});

const decision = (
  name: string,
  created: string,
  spec: Partial<RolloutDecisionResource['spec']>,
): RolloutDecisionResource => ({
  metadata: { name, creationTimestamp: new Date(created) },
  spec: { policy: 'default', action: 'Approve', user: 'alice', ...spec },
});

describe('decisions', () => {
  test('approvals and rejections count for their target and policy only', () => {
    const d = decisionsOf(
      [
        decision('a', '2026-12-02T10:00:00Z', { target: 'v2', wave: 'early' }),
        decision('b', '2026-12-02T10:00:00Z', { target: 'v3', wave: 'early' }),
        decision('c', '2026-12-02T10:00:00Z', { target: 'v2', wave: 'early', policy: 'other' }),
        decision('d', '2026-12-02T10:00:00Z', { action: 'Reject', target: 'v3', user: 'bob' }),
      ],
      'default',
      'v2',
    );
    assert.deepEqual(d, {
      approvals: [{ by: 'alice', at: Date.parse('2026-12-02T10:00:00Z'), name: 'a', wave: 'early' }],
    });
  });

  test('the newest of pauses and resumes counts (in one second, by name); a resume lifts an earlier rejection', () => {
    const pause = decision('default.001.pause', '2026-12-02T10:00:00Z', { action: 'Pause', user: 'carol' });
    const resume = decision('default.002.resume', '2026-12-02T10:00:00Z', { action: 'Resume' });
    const reject = decision('default.000.reject', '2026-12-02T09:00:00Z', { action: 'Reject', target: 'v2' });
    assert.deepEqual(decisionsOf([resume, pause, reject], 'default', 'v2'), {
      approvals: [],
      resume: 'default.002.resume',
    });
    const laterPause = decision('default.003.pause', '2026-12-02T10:00:01Z', {
      action: 'Pause',
      user: 'carol',
    });
    const d = decisionsOf([laterPause, resume, pause], 'default', 'v2');
    assert.equal(d.paused?.by, 'carol');
    assert.equal(d.paused.name, 'default.003.pause');
    const rejectAfter = decision('default.004.reject', '2026-12-02T11:00:00Z', {
      action: 'Reject',
      target: 'v2',
      user: 'bob',
      reason: 'no',
    });
    assert.deepEqual(decisionsOf([resume, rejectAfter], 'default', 'v2').rejected, {
      by: 'bob',
      at: Date.parse('2026-12-02T11:00:00Z'),
      name: 'default.004.reject',
      reason: 'no',
    });
  });

  test('the resume token is the annotation alone while no resume was decided (a stored state reads the same)', () => {
    assert.equal(resumeTokenOf('1700000000', undefined), '1700000000');
    assert.equal(resumeTokenOf(undefined, undefined), undefined);
    assert.equal(resumeTokenOf('1700000000', 'r'), '1700000000|decision/r');
    assert.notEqual(resumeTokenOf(undefined, 'r'), resumeTokenOf(undefined, 's'));
  });
});

describe('what a target changes', () => {
  const setOf = (over: Parameters<typeof syncSources>[0]): SyncSet => {
    const r = buildSyncSet(syncSources(over));
    assert.ok(r.ok, r.ok ? '' : r.reason);
    return r.set;
  };
  const stable = { set: setOf({}), releaseVersion: '1.0.0' };
  const withConfig = (change: (c: Record<string, unknown>) => void) => {
    const c = JSON.parse(seedConfigText()) as Record<string, unknown>;
    change(c);
    return setOf({
      configMap: {
        metadata: { name: 'rt-bootstrapper-config', namespace: 'kcp-system' },
        data: { 'rt-bootstrapper-config.json': JSON.stringify(c) },
      },
    });
  };

  test('each kind of source on its own, and none', () => {
    assert.deepEqual(changesBetween(stable, stable), []);
    const pull = setOf({
      pullSecret: {
        metadata: { name: 'kcp-pull', namespace: 'kcp-system' },
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': 'eyJhdXRocyI6e319' },
      },
    });
    assert.deepEqual(changesBetween({ set: pull, releaseVersion: '1.0.0' }, stable), ['pullCredentials']);
    const bundle = setOf({
      clusterTrustBundle: {
        metadata: { name: 'rt-bootstrapper-k3d.test:ctb:1' },
        spec: { signerName: 'rt-bootstrapper-k3d.test/ctb', trustBundle: 'OTHER PEM' },
      },
    });
    assert.deepEqual(changesBetween({ set: bundle, releaseVersion: '1.0.0' }, stable), ['trustBundle']);
    const overrides = withConfig((c) => {
      c.overrides = { ...(c.overrides as Record<string, string>), 'quay.io': 'mirror.example.com/quay' };
    });
    assert.deepEqual(changesBetween({ set: overrides, releaseVersion: '1.0.0' }, stable), ['overrides']);
    const failOpen = withConfig((c) => {
      c.failOpen = false; // the default is true
    });
    assert.deepEqual(changesBetween({ set: failOpen, releaseVersion: '2.0.0' }, stable), [
      'config',
      'webhookRelease',
    ]);
  });

  test('a side not known: undefined (every approval applies)', () => {
    assert.equal(changesBetween(stable, undefined), undefined);
    assert.equal(changesBetween({ set: undefined, releaseVersion: '1.0.0' }, stable), undefined);
  });
});

describe('approvals in the status and rtb status', () => {
  type StatusInput = Parameters<typeof statusOf>[0];
  /** The status of policy generation 4 after `p`, the canary alone at the target unless `over` says. */
  const statusAfter = (p: RolloutPlan, over: Partial<StatusInput>) =>
    statusOf({
      state: p.state,
      policy: POLICY,
      generation: 4,
      message: p.message,
      runtimes: { total: 5, atTarget: 1, healthy: 1 },
      ...over,
    });
  // Paused at wave 1, which asks for an approval too.
  const waiting = plan({ decisions: DECISIONS.paused });
  const status = statusAfter(waiting, {
    ...(waiting.awaiting ? { awaiting: waiting.awaiting } : {}),
    paused: CAROL,
    now: 60_000,
  });

  test('the state round-trips through the status; conditions say what waits and who paused', () => {
    const read = stateOf(JSON.parse(JSON.stringify(status)) as typeof status);
    assert.deepEqual(JSON.parse(JSON.stringify(read)), waiting.state);
    assert.deepEqual(
      status.conditions?.map((c) => [c.type, c.status, c.reason]),
      [
        ['Approved', 'False', 'AwaitingApproval'],
        ['Paused', 'True', 'Paused'],
      ],
    );
    // A condition keeps its transition time while its status holds.
    const approved = plan({ state: waiting.state, decisions: DECISIONS.approved, now: 70_000 });
    const next = statusAfter(approved, { previous: status, now: 70_000 });
    assert.deepEqual(next.decisions, [
      {
        wave: 'early',
        decision: 'Approved',
        user: 'alice',
        at: '2026-12-02T10:00:00.000Z',
        name: 'default.approve.1',
      },
    ]);
    const cond = next.conditions?.find((c) => c.type === 'Approved');
    assert.equal(cond?.status, 'True');
    assert.equal(cond.message, 'wave early approved by alice at 2026-12-02T10:00:00.000Z');
    assert.equal(cond.lastTransitionTime, new Date(70_000).toISOString());
    const same = statusAfter(approved, {
      message: '',
      runtimes: { total: 5, atTarget: 5, healthy: 5 },
      previous: next,
      now: 99_000,
    });
    assert.equal(
      same.conditions?.find((c) => c.type === 'Approved')?.lastTransitionTime,
      new Date(70_000).toISOString(),
    );
  });

  test('rtb status says what waits for whom', () => {
    const f = fleetStatus([], { metadata: { name: 'default' }, spec: { waves: [] }, status });
    assert.deepEqual(f.rollout?.waiting, {
      wave: 'early',
      since: new Date(60_000).toISOString(),
      for: [
        { decision: 'resume', command: 'rtb rollout resume default' },
        { decision: 'approve', command: 'rtb rollout approve default (or reject default)' },
      ],
    });
    const text = formatFleetStatus(f);
    assert.match(
      text,
      /wave early waits since 1970-01-01T00:01:00.000Z for a resume: rtb rollout resume default; an approval: rtb rollout approve default \(or reject default\)/,
    );
    assert.match(text, /paused by carol at 2026-12-02T12:00:00.000Z/);
    assert.match(text, /the target changes: pullCredentials/);
  });
});
