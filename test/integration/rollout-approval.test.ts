/**
 * A wave behind an approval (docs/rollout.md, approvals): the rollout of new pull credentials
 * stops after the canary until a person runs `rtb rollout approve`, `rtb rollout reject` rolls
 * the canary back like a halt, and `rtb rollout pause` holds even the canary until a resume. The decisions are RolloutDecisions that an operator without the
 * right to edit the policy may create, and the status names the user the API server authenticated.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  newRolloutDecision,
  rolloutDecisionPath,
  type RolloutDecisionResource,
} from '../../src/api/rollout-decision.js';
import { rolloutPolicyPath } from '../../src/api/rollout-policy.js';
import { runRollout } from '../../src/cli/commands/rollout-action.js';
import { eventually } from '../../src/envtest/eventually.js';
import { applyObjects } from '../../src/kube/apply.js';
import { createEventRecorder } from '../../src/kube/event-recorder.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { renderRolloutDecisionObjects, ROLLOUT_OPERATOR_ROLE } from '../../src/render/rollout-decisions.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { useControlPlane } from '../support/control-plane.js';
import { clientAs } from '../support/kcp.js';
import { RolloutFleet } from '../support/rollout-fleet.js';

const RUNTIMES = ['rt-1', 'rt-2', 'rt-3'] as const;
const f = new RolloutFleet(useControlPlane({ clusters: ['kcp', ...RUNTIMES] }));
/** An operator who may decide on rollouts (the rendered ClusterRole) and nothing else. */
const ALICE = 'alice';
let alice: KubeConfig;

interface EventList {
  items: { reason?: string; note?: string; regarding?: { kind?: string; name?: string } }[];
}

/** The Events about the policy with `reason`, as the KCP stores them. */
async function policyEvents(reason: string): Promise<EventList['items']> {
  const list = await kubeRequest<EventList>(f.kcp().kubeConfig(), {
    method: 'GET',
    path: '/apis/events.k8s.io/v1/namespaces/default/events',
  });
  return list.items.filter(
    (e) => e.reason === reason && e.regarding?.kind === 'RolloutPolicy' && e.regarding.name === 'default',
  );
}

/** Creates a decision as `kc`; the HTTP status of a refusal, or 201. */
async function createAs(kc: KubeConfig, d: RolloutDecisionResource): Promise<number> {
  try {
    await kubeRequest(kc, { method: 'POST', path: rolloutDecisionPath(), body: d });
    return 201;
  } catch (error) {
    return statusCodeOf(error) ?? 0;
  }
}

describe('a wave behind an approval', () => {
  f.useFleet(
    RUNTIMES,
    {
      waves: [
        { name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '2s' },
        // Everyone else, once a person approved a change of the pull credentials.
        { name: 'all', percent: 100, approval: { sources: ['pullCredentials'] } },
      ],
      failureThreshold: 0,
      healthDeadline: '60s',
      workloads: { toleratedFailures: 0, observeFor: '0s', preflight: false },
    },
    async () => {
      // As rendered with the controller: the admission policy and the operators' ClusterRole.
      await applyObjects(f.kcp().kubeConfig(), renderRolloutDecisionObjects(), { fieldManager: 'test' });
      await applyObjects(
        f.kcp().kubeConfig(),
        [
          {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name: 'test-rollout-operator' },
            roleRef: {
              apiGroup: 'rbac.authorization.k8s.io',
              kind: 'ClusterRole',
              name: ROLLOUT_OPERATOR_ROLE,
            },
            subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: ALICE }],
          } as never,
        ],
        { fieldManager: 'test' },
      );
      alice = await clientAs(f.kcp(), ALICE);
      // The API server enforces a new admission policy a moment after it is stored: until a
      // decision naming another user is refused (a probe of another policy, removed if admitted).
      await eventually(
        async () => {
          const probe = newRolloutDecision(`probe-${Date.now()}`, {
            policy: 'probe',
            action: 'Pause',
            user: 'mallory',
          });
          const code = await createAs(alice, probe);
          if (code === 201)
            await kubeRequest(f.kcp().kubeConfig(), {
              method: 'DELETE',
              path: rolloutDecisionPath(probe.metadata.name),
            });
          return code === 422 || code === 403 ? true : undefined;
        },
        30_000,
        'the admission policy of RolloutDecisions to be in force',
        500,
      );
      f.events = createEventRecorder({
        kubeConfig: f.kcp().kubeConfig(),
        namespace: 'kcp-system',
        reportingController: 'rt-bootstrapper.kyma-project.io/controller',
        reportingInstance: 'rollout-approval-test',
        logger: silentLogger(),
      });
      await f.startInstalled(RUNTIMES);
    },
  );

  test('new pull credentials wait after the canary until rtb rollout approve; the status records who approved', async () => {
    const stable = f.sources.snapshot().version;
    const target = await f.newPullSecretSet('v2', stable);
    await f.waitServed('rt-1', target);
    const waiting = (await f.waitPhase('AwaitingApproval')).status;
    assert.ok(waiting);
    assert.deepEqual(waiting.awaiting && { ...waiting.awaiting, since: '' }, {
      wave: 'all',
      since: '',
      approval: true,
      paused: false,
    });
    assert.deepEqual(waiting.changes, ['pullCredentials']);
    assert.deepEqual(
      waiting.conditions?.map((c) => [c.type, c.status, c.reason]),
      [['Approved', 'False', 'AwaitingApproval']],
    );
    await eventually(async () => ((await policyEvents('AwaitingApproval')).length > 0 ? true : undefined));
    assert.match(
      await f.statusText(),
      /wave all waits since .* for an approval: rtb rollout approve default/,
    );
    // Waiting, the wave behind the gate keeps the stable set.
    for (const id of ['rt-2', 'rt-3']) assert.equal((await f.readRb(id)).status?.appliedVersion, stable);

    // Deciding is not editing: the operator may not change the policy...
    await assert.rejects(
      kubeRequest(alice, {
        method: 'PATCH',
        path: rolloutPolicyPath('default'),
        body: { spec: { failureThreshold: 5 } },
      }),
      (e: unknown) => statusCodeOf(e) === 403,
    );
    // ...nor approve in another's name.
    const forged = newRolloutDecision(`default.forged.${Date.now()}`, {
      policy: 'default',
      action: 'Approve',
      target: waiting.target,
      wave: 'all',
      user: 'the-release-manager',
    });
    assert.ok([403, 422].includes(await createAs(alice, forged)), 'a decision in another user’s name');
    assert.equal((await f.readPolicy()).status?.phase, 'AwaitingApproval');

    const said = await runRollout('approve', 'default', { reason: 'mirror checked' }, alice);
    assert.match(said, new RegExp(`approved wave all of ${target}/1.0.0 as alice`));
    for (const id of ['rt-2', 'rt-3']) await f.waitServed(id, target);
    const done = await f.waitPhase('Complete');
    const decisions = await kubeRequest<{ items: RolloutDecisionResource[] }>(f.kcp().kubeConfig(), {
      method: 'GET',
      path: rolloutDecisionPath(),
    });
    const approval = decisions.items.find((d) => d.spec.action === 'Approve' && d.spec.policy === 'default');
    assert.ok(approval);
    assert.deepEqual(done.status?.decisions, [
      {
        wave: 'all',
        decision: 'Approved',
        user: ALICE,
        at: new Date(String(approval.metadata.creationTimestamp)).toISOString(),
        name: approval.metadata.name,
      },
    ]);
    assert.equal(done.status.conditions?.find((c) => c.type === 'Approved')?.status, 'True');
    await eventually(async () => ((await policyEvents('Approved')).length > 0 ? true : undefined));
  });

  test('rtb rollout reject rolls the canary back like a halt and names who rejected; a resume lifts it', async () => {
    const stable = f.sources.snapshot().version;
    const target = await f.newPullSecretSet('v3', stable);
    await f.waitServed('rt-1', target);
    await f.waitPhase('AwaitingApproval');

    await runRollout('reject', 'default', { reason: 'the mirror lacks an image' }, alice);
    const halted = await f.waitPhase('Halted');
    assert.match(
      halted.status?.haltReason ?? '',
      /^rejected by alice at \S+ \(RolloutDecision default\.\d+\.reject\.[0-9a-f]+\): the mirror lacks an image$/,
    );
    assert.deepEqual(
      halted.status?.decisions?.map((d) => [d.wave, d.decision, d.user]),
      [['all', 'Rejected', ALICE]],
    );
    // Rolled back: the canary is on the stable set again; nobody else ever left it.
    await f.waitServed('rt-1', stable);
    for (const id of ['rt-2', 'rt-3']) assert.equal((await f.readRb(id)).status?.appliedVersion, stable);
    assert.ok((await f.metric('rtb_rollout_rollbacks_total')) >= 1);
    await eventually(async () => ((await policyEvents('Rejected')).length > 0 ? true : undefined));

    // A resume lifts the rejection: the canary gets the target again, and the gate asks again.
    await runRollout('resume', 'default', {}, alice);
    await f.waitServed('rt-1', target);
    await f.waitPhase('AwaitingApproval');
  });

  test('rtb rollout pause holds even the canary of a new change until rtb rollout resume', async () => {
    // The rejected target of the test before waits for its approval: it is left for a new one.
    const before = f.sources.snapshot().version;
    await runRollout('pause', 'default', { reason: 'change freeze' }, alice);
    const target = await f.newPullSecretSet('v4', before);
    // (The rollout of the target before pauses too, at its wave all: waited past.)
    const paused = await eventually(
      async () => {
        const s = (await f.readPolicy()).status;
        return s?.phase === 'Paused' && s.target === `${target}/1.0.0` ? s : undefined;
      },
      60_000,
      'the new target to wait, paused',
    );
    assert.equal(paused.waveName, 'canary');
    assert.equal(paused.paused?.user, ALICE);
    assert.deepEqual(paused.awaiting && { ...paused.awaiting, since: '' }, {
      wave: 'canary',
      since: '',
      approval: false,
      paused: true,
    });
    assert.match(await f.statusText(), /wave canary waits since .* for a resume: rtb rollout resume default/);
    // Paused before wave 0: the canary keeps what it had.
    assert.notEqual((await f.readRb('rt-1')).status?.appliedVersion, target);

    await runRollout('resume', 'default', {}, alice);
    await f.waitServed('rt-1', target);
    await f.waitPhase('AwaitingApproval');
    await runRollout('approve', 'default', {}, alice);
    for (const id of ['rt-2', 'rt-3']) await f.waitServed(id, target);
    const done = (await f.waitPhase('Complete')).status;
    assert.equal(done?.paused, undefined);
    assert.deepEqual(
      done?.decisions?.map((d) => [d.wave, d.decision, d.user]),
      [['all', 'Approved', ALICE]],
    );
  });
});
