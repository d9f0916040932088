import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RolloutPolicyResource } from '../../../../src/api/rollout-policy.js';
import type {
  RuntimeBootstrapper,
  RuntimeBootstrapperStatus,
} from '../../../../src/api/runtime-bootstrapper.js';
import { fleetStatus, formatFleetStatus } from '../../../../src/controller/rollout/fleet-status.js';
import { policyOf, stateOf, statusOf } from '../../../../src/controller/rollout/policy-resource.js';
import { DEFAULT_ROLLOUT_POLICY } from '../../../../src/controller/rollout/rollout-policy.js';
import type { RolloutState } from '../../../../src/controller/rollout/rollout-state.js';
import { runtimeView } from '../../../../src/controller/rollout/runtime-view.js';

const policyResource = (spec: RolloutPolicyResource['spec']): RolloutPolicyResource => ({
  metadata: { name: 'default', generation: 3 },
  spec,
});

const rb = (
  id: string,
  status: RuntimeBootstrapperStatus,
  more: Partial<RuntimeBootstrapper['metadata']> = {},
): RuntimeBootstrapper => ({
  metadata: { name: id, namespace: 'kcp-system', ...more },
  spec: { runtimeID: id },
  status,
});

/** The fleet status of runtimes named by their ids, outside any rollout. */
const fleetOf = (statuses: Record<string, RuntimeBootstrapperStatus>) =>
  fleetStatus(
    Object.entries(statuses).map(([id, status]) => rb(id, status)),
    undefined,
  );

describe('rollout policy resource', () => {
  test('the spec becomes a policy: durations parsed, defaults filled', () => {
    const { policy, problem } = policyOf(
      policyResource({
        waves: [
          { name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '1m30s' },
          { name: 'all', percent: 100 },
        ],
      }),
      { autoRollback: true },
    );
    assert.equal(problem, undefined);
    assert.deepEqual(
      policy.waves.map((w) => w.soakMs),
      [90_000, 0],
    );
    assert.equal(policy.failureThreshold, 0);
    assert.equal(policy.healthDeadlineMs, DEFAULT_ROLLOUT_POLICY.healthDeadlineMs);
    assert.equal(policy.autoRollback, true);
  });

  test('--no-auto-rollback wins over the spec; no resource is the default policy', () => {
    assert.equal(
      policyOf(policyResource({ waves: [{ name: 'a', percent: 5 }], autoRollback: true }), {
        autoRollback: false,
      }).policy.autoRollback,
      false,
    );
    assert.deepEqual(policyOf(undefined, { autoRollback: true }).policy.waves, DEFAULT_ROLLOUT_POLICY.waves);
  });

  test('a bad spec is refused with the field named, and the default policy is in force', () => {
    const bad = policyOf(policyResource({ waves: [{ name: 'a', percent: 5, soak: 'soon' }] }), {
      autoRollback: true,
    });
    assert.match(bad.problem ?? '', /waves\[0\]\.soak/);
    assert.deepEqual(bad.policy.waves, DEFAULT_ROLLOUT_POLICY.waves);
    const repeated = policyOf(
      policyResource({
        waves: [
          { name: 'a', percent: 5 },
          { name: 'a', percent: 9 },
        ],
      }),
      { autoRollback: true },
    );
    assert.match(repeated.problem ?? '', /repeated/);
  });

  test('only a refused spec falls back to the default policy: a fault is not taken for one', () => {
    // The default is one wave of everything; taking a fault for a refused spec would roll a new
    // revision out to every runtime at once where the spec asked for waves.
    const broken = {
      metadata: { name: 'default' },
      spec: { waves: null },
    } as unknown as RolloutPolicyResource;
    assert.throws(() => policyOf(broken, { autoRollback: true }), TypeError);
  });

  test('the state survives its round trip through the status', () => {
    const state: RolloutState = {
      target: 'b/1.0.0',
      stable: 'a/1.0.0',
      wave: 1,
      waveStartedAt: Date.parse('2026-11-24T04:00:00.000Z'),
      healthySince: Date.parse('2026-11-24T04:01:00.000Z'),
      phase: 'Halted',
      haltReason: 'why',
      failures: [{ id: 'rt-1', reason: 'refused' }],
      resumeToken: 't1',
    };
    const { policy } = policyOf(policyResource({ waves: [{ name: 'canary', percent: 1 }] }), {
      autoRollback: true,
    });
    const status = statusOf({
      state,
      policy,
      generation: 3,
      message: 'm',
      runtimes: { total: 2, atTarget: 1, healthy: 0 },
    });
    assert.equal(status.waveName, 'rest');
    assert.equal(status.observedGeneration, 3);
    assert.deepEqual(stateOf(JSON.parse(JSON.stringify(status)) as typeof status), state);
    assert.equal(stateOf({}), undefined);
  });
});

describe('runtime view', () => {
  const ready = { state: 'Ready' as const, appliedVersion: 's2', webhookVersion: '1.0.0' };
  test('healthy only when Ready and the webhook serves the set applied', () => {
    assert.deepEqual(runtimeView(rb('a', { ...ready, servedVersion: 's2' })), {
      id: 'a',
      labels: undefined,
      current: 's2/1.0.0',
      excluded: false,
      appliedAt: undefined,
      health: 'healthy',
    });
    const waiting = runtimeView(rb('a', { ...ready, servedVersion: 's1' }));
    assert.equal(waiting.health, 'pending');
    assert.match(waiting.reason ?? '', /has not reported serving set s2/);
  });

  test("a refusal of the set applied is a failure, with the webhook's reason", () => {
    const v = runtimeView(
      rb('a', {
        ...ready,
        servedVersion: 's1',
        refusedVersion: 's2',
        refusal: 'availableFeatures[4]: no landscape',
      }),
    );
    assert.equal(v.health, 'failed');
    assert.match(v.reason ?? '', /refused set s2: availableFeatures\[4\]: no landscape/);
  });

  test('an unreachable runtime is pending with why; paused and deleting ones are excluded', () => {
    const v = runtimeView(
      rb('a', {
        state: 'Error',
        conditions: [
          {
            type: 'RuntimeReachable',
            status: 'False',
            reason: 'Unreachable',
            message: 'timeout',
            lastTransitionTime: '',
          },
        ],
      }),
    );
    assert.equal(v.health, 'pending');
    assert.match(v.reason ?? '', /Error: RuntimeReachable Unreachable: timeout/);
    assert.equal(runtimeView({ ...rb('b', ready), spec: { runtimeID: 'b', paused: true } }).excluded, true);
    assert.equal(runtimeView(rb('c', ready, { deletionTimestamp: new Date() })).excluded, true);
  });
});

describe('fleet status (rtb status)', () => {
  test('runtimes by state, set and release; the rollout; the failing ones with why', () => {
    const f = fleetStatus(
      [
        rb('rt-2', {
          ...{ state: 'Ready', appliedVersion: 's1', webhookVersion: '1.0.0' },
          servedVersion: 's1',
        }),
        rb('rt-1', {
          state: 'Ready',
          appliedVersion: 's2',
          webhookVersion: '1.0.0',
          servedVersion: 's1',
          refusedVersion: 's2',
          refusal: 'bad',
        }),
        rb('rt-3', {
          state: 'Error',
          conditions: [
            {
              type: 'RuntimeReachable',
              status: 'False',
              reason: 'Unreachable',
              message: 'down',
              lastTransitionTime: '',
            },
          ],
        }),
      ],
      {
        metadata: { name: 'default' },
        spec: { waves: [{ name: 'canary', percent: 1 }] },
        status: {
          phase: 'Halted',
          waveName: 'canary',
          target: 's2/1.0.0',
          stable: 's1/1.0.0',
          haltReason: 'rt-1 refused',
          failures: [{ runtime: 'rt-1', reason: 'bad' }],
        },
      },
    );
    assert.deepEqual(f.byState, { Ready: 2, Error: 1 });
    assert.deepEqual(f.bySetVersion, { s1: 1, s2: 1, '(none)': 1 });
    assert.deepEqual(
      f.failing.map((x) => x.runtime),
      ['rt-1', 'rt-3'],
    );
    assert.equal(f.rollout?.phase, 'Halted');
    const text = formatFleetStatus(f);
    assert.match(text, /Runtimes: 3 \(Ready 2, Error 1\)/);
    assert.match(text, /Rollout \(policy default\): Halted, wave canary/);
    assert.match(text, /rt-3 {2}Error {2}Error: RuntimeReachable Unreachable: down/);
    assert.deepEqual(f.rollout.halt, { failureThreshold: 0, minFailedRuntimes: 2 }, 'the defaults');
    assert.match(
      text,
      /\n {2}1 runtime\(s\) failed; a halt needs more than 0 and at least 2 \(or every runtime of the waves started\)\n {2}failed in the rollout: rt-1: bad\n/,
    );
    assert.equal(fleetStatus([], undefined).rollout, null);
  });

  test("each runtime's ClusterTrustBundle API, and the runtimes whose webhook mounts no trust bundle", () => {
    const condition = (
      type: 'TrustBundleAPI' | 'TrustBundleProjection',
      status: 'True' | 'False',
      reason: string,
    ) => ({
      type,
      status,
      reason,
      message: `${reason} because`,
      lastTransitionTime: '',
    });
    const f = fleetOf({
      'rt-a': { state: 'Ready', clusterTrustBundleAPI: 'certificates.k8s.io/v1' },
      'rt-b': {
        state: 'Ready',
        clusterTrustBundleAPI: 'certificates.k8s.io/v1beta1',
        conditions: [condition('TrustBundleProjection', 'False', 'Dropped')],
      },
      'rt-c': { state: 'Ready', conditions: [condition('TrustBundleAPI', 'False', 'NotServed')] },
      'rt-d': { state: 'Installing' },
    });
    assert.deepEqual(f.byTrustBundleAPI, {
      'certificates.k8s.io/v1': 1,
      'certificates.k8s.io/v1beta1': 1,
      none: 1,
      '(none)': 1,
    });
    assert.deepEqual(
      f.noTrustBundleMount.map((x) => `${x.runtime} ${x.reason}`),
      ['rt-b Dropped', 'rt-c NotServed'],
    );
    assert.deepEqual(f.failing, [], 'a runtime without the mount is not failing');
    const text = formatFleetStatus(f);
    assert.match(text, /ClusterTrustBundle API: .*certificates\.k8s\.io\/v1 1/);
    assert.match(text, /Admission: webhook 4\n/);
    assert.match(
      text,
      /No trust-bundle mount:\n {2}rt-b {2}Dropped {2}Dropped because\n {2}rt-c {2}NotServed/,
    );
  });

  test('how each runtime admits Pods: our policy at its version, or the webhook alone', () => {
    const f = fleetOf({
      'rt-a': { state: 'Ready', admissionPolicyAPI: 'admissionregistration.k8s.io/v1' },
      'rt-b': { state: 'Ready', admissionPolicyAPI: 'admissionregistration.k8s.io/v1beta1' },
      'rt-c': { state: 'Ready', admissionPolicyAPI: 'admissionregistration.k8s.io/v1' },
      'rt-d': { state: 'Ready' },
    });
    assert.deepEqual(f.byAdmissionPath, {
      'policy admissionregistration.k8s.io/v1': 2,
      'policy admissionregistration.k8s.io/v1beta1': 1,
      webhook: 1,
    });
    assert.match(formatFleetStatus(f), /Admission: .*policy admissionregistration\.k8s\.io\/v1 2/);
  });
});
