import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RESUME_ANNOTATION, rolloutPolicyPath } from '../../src/api/rollout-policy.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { markDeploymentAvailable } from '../support/kcp.js';
import { RolloutFleet } from '../support/rollout-fleet.js';

/** rt-1 is the canary. */
const RUNTIMES = ['rt-1', 'rt-2', 'rt-3', 'rt-4', 'rt-5'] as const;
const REST = ['rt-2', 'rt-3', 'rt-4', 'rt-5'] as const;
const CANARY_WAVE = { name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '0s' };
const f = new RolloutFleet(useControlPlane({ clusters: ['kcp', ...RUNTIMES] }));

/** Waits until `id` runs webhook release `version`, then plays the kubelet for its Deployment. */
async function completeRelease(id: string, version: string): Promise<void> {
  await eventually(
    async () => ((await f.readRb(id)).status?.webhookVersion === version ? true : undefined),
    40_000,
    `${id} to get release ${version}`,
  );
  await markDeploymentAvailable(f.rt(id));
}

describe('progressive rollout, the operator: resume by annotation, policy deleted', () => {
  // Halting only: what fails keeps the new release, so the operator can fix it and resume.
  f.useFleet(RUNTIMES, {
    waves: [CANARY_WAVE],
    failureThreshold: 0,
    healthDeadline: '5s',
    autoRollback: false,
  });

  test('a halted rollout stays halted after the fix until the operator annotates the policy; then it continues', async () => {
    const set = f.sources.snapshot().version;
    await f.start('2.0.0');
    // Nobody plays the kubelet for 2.0.0 at first: the canary is not healthy by the deadline.
    const halted = (await f.waitPhase('Halted')).status;
    assert.ok(halted);
    assert.equal(halted.target, `${set}/2.0.0`);
    assert.match(halted.haltReason ?? '', /rt-1: not healthy at .*\/2\.0\.0 within 5 s/);
    // The operator gives the waves more time (a spec change alone resumes nothing) and fixes
    // what failed (the kubelet runs the canary's new Pods): the canary is healthy at the target.
    await f.patchPolicy({ healthDeadline: '60s' });
    await completeRelease('rt-1', '2.0.0');
    await f.waitServed('rt-1', set);
    await eventually(
      async () => ((await f.readPolicy()).status?.runtimes?.healthy === 1 ? true : undefined),
      20_000,
      'a pass to see the canary healthy',
    );
    // Still halted: a halt ends only by a new change or by the operator.
    const seen = (await f.readPolicy()).status;
    assert.equal(seen?.phase, 'Halted');
    for (const id of REST) assert.equal((await f.readRb(id)).status?.webhookVersion, '1.0.0', id);

    await f.patchPolicy({}, { [RESUME_ANNOTATION]: 'fixed-1' });
    for (const id of REST) await completeRelease(id, '2.0.0');
    for (const id of REST) await f.waitServed(id, set);
    const done = (await f.waitPhase('Complete')).status;
    assert.ok(done);
    assert.equal(done.stable, `${set}/2.0.0`);
    assert.equal(done.resumeToken, 'fixed-1');
    assert.deepEqual(done.failures, []);
  });

  test('deleting the policy mid-rollout: one wave of everything again, and no wave left in any status', async () => {
    // A wave renamed: the statuses say so (the Wave column follows the policy).
    await f.patchPolicy({ waves: [{ ...CANARY_WAVE, name: 'canaries', soak: '1h' }] });
    await eventually(
      async () => ((await f.readRb('rt-1')).status?.rolloutWave === 'canaries' ? true : undefined),
      20_000,
      'the renamed wave in the status of rt-1',
    );
    const before = f.sources.snapshot().version;
    const target = await f.newPullSecretSet('v2', before);
    await f.waitServed('rt-1', target);
    await f.waitPhase('Soaking');
    for (const id of REST) assert.equal((await f.readRb(id)).status?.appliedVersion, before, id);
    assert.equal((await f.readRb('rt-2')).status?.rolloutWave, 'rest');

    await kubeRequest(f.kcp().kubeConfig(), { method: 'DELETE', path: rolloutPolicyPath('default') });
    // The soak no longer holds anyone back; the wave and the webhook's report (kept only under a
    // policy) leave every status, so the Wave column is empty.
    for (const id of RUNTIMES) {
      const status = await eventually(
        async () => {
          const s = (await f.readRb(id)).status;
          return s?.state === 'Ready' && s.appliedVersion === target && s.rolloutWave === undefined
            ? s
            : undefined;
        },
        40_000,
        `${id} to get ${target} without a wave`,
      );
      assert.equal(status.servedVersion, undefined, id);
    }
    assert.equal((await f.statusJson()).rollout, null);
    assert.equal(await f.metric('rtb_rollout_phase'), 0, 'no phase is current');

    // A policy again: it adopts what runs everywhere, and the waves are back in the statuses.
    await f.createPolicy({ waves: [CANARY_WAVE], failureThreshold: 0, healthDeadline: '5s' });
    const adopted = (await f.waitPhase('Complete')).status;
    assert.equal(adopted?.stable, `${target}/2.0.0`);
    await eventually(
      async () => ((await f.readRb('rt-1')).status?.rolloutWave === 'canary' ? true : undefined),
      20_000,
      'the canary wave in rt-1 status',
    );
  });
});
