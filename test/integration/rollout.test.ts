import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runStatus } from '../../src/cli/commands/status-action.js';
import type { FleetStatus } from '../../src/controller/rollout/fleet-status.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { coreOf, markDeploymentAvailable } from '../support/kcp.js';
import { RolloutFleet, config } from '../support/rollout-fleet.js';

/** rt-1 is the canary; rt-5 gets its RuntimeBootstrapper only in the middle of a rollout. */
const RUNTIMES = ['rt-1', 'rt-2', 'rt-3', 'rt-4', 'rt-5'] as const;
const FIRST = ['rt-1', 'rt-2', 'rt-3', 'rt-4'] as const;
const REST = ['rt-2', 'rt-3', 'rt-4'] as const;
const f = new RolloutFleet(useControlPlane({ clusters: ['kcp', ...RUNTIMES] }));

describe('progressive rollout: waves gated on health, halt and rollback, resume, restart', () => {
  before(async () => {
    await f.setUp(RUNTIMES, {
      waves: [{ name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '3s' }],
      failureThreshold: 0,
      healthDeadline: '60s',
    });
    await f.start();
    for (const id of FIRST) await f.install(id);
  });
  after(async () => {
    await f.stopAll();
  });

  test('the revision in force is adopted: every runtime serves it, the policy says Complete', async () => {
    const version = f.sources.snapshot().version;
    for (const id of FIRST) await f.waitServed(id, version);
    const policy = await f.waitPhase('Complete');
    assert.equal(policy.status?.stable, `${version}/1.0.0`);
    assert.equal((await f.readRb('rt-1')).status?.rolloutWave, 'canary');
    assert.equal((await f.readRb('rt-2')).status?.rolloutWave, 'rest');
  });

  test('a good change walks the canary first, and the rest only after the canary soaked', async () => {
    const before = f.sources.snapshot().version;
    const t = f.trace(FIRST);
    await f.putPullSecret('v2');
    const version = await f.nextVersion(before);
    for (const id of FIRST) await f.waitServed(id, version);
    const samples = await t.stop();
    const policy = await f.waitPhase('Complete');
    assert.equal(policy.status?.stable, `${version}/1.0.0`);
    // Never early: whenever one of the rest had the new set, the canary served it already.
    let canaryServedAlone = false;
    for (const s of samples) {
      const restHasIt = REST.some((id) => s[id]?.applied === version);
      if (restHasIt)
        assert.equal(s['rt-1']?.served, version, `the rest got ${version} before the canary served it`);
      if (s['rt-1']?.served === version && !restHasIt) canaryServedAlone = true;
    }
    assert.ok(
      canaryServedAlone,
      'the canary served the new set while the rest still had the old one (the soak)',
    );
  });

  test('a config the webhook refuses halts at the canary and rolls it back; nothing else is touched', async () => {
    const stable = f.sources.snapshot().version;
    const t = f.trace(FIRST);
    const rollbacks = await f.metric('rtb_rollout_rollbacks_total');
    // The KCP accepts it (set-landscape needs a landscape only where it runs); each webhook refuses it.
    await f.putConfig(config((c) => c.availableFeatures.push('rt-cfg.kyma-project.io/set-landscape')));
    const bad = await f.nextVersion(stable);
    const halted = await f.waitPhase('Halted');
    // The halt read the refusal from the canary's status holding the bad set: it got it.
    assert.ok(
      halted.status?.haltReason?.includes(`rt-1: the webhook refused set ${bad}`),
      halted.status?.haltReason,
    );
    assert.match(halted.status?.haltReason ?? '', /set-landscape/);
    assert.deepEqual(
      halted.status?.failures?.map((f) => f.runtime),
      ['rt-1'],
    );
    await f.waitServed('rt-1', stable);
    // Sampled every 100 ms, the canary's short time with the bad set can fall between two reads.
    const samples = await t.stop();
    for (const s of samples) for (const id of REST) assert.equal(s[id]?.applied, stable, `${id} was touched`);
    const cm = await coreOf(f.rt('rt-1')).readNamespacedConfigMap({
      name: 'rt-bootstrapper-config',
      namespace: 'kyma-system',
    });
    assert.ok(
      !cm.data?.['rt-bootstrapper-config.json']?.includes('set-landscape'),
      'the good config is back',
    );
    assert.ok((await f.metric('rtb_rollout_rollbacks_total')) > rollbacks);
    assert.ok((await f.metric('rtb_rollout_halts_total')) >= 1);
    // Still halted on later passes, the bad set with nobody.
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal((await f.readPolicy()).status?.phase, 'Halted');
    for (const id of FIRST) assert.equal((await f.readRb(id)).status?.appliedVersion, stable);
  });

  test('a fixed config resumes: canary, then the rest', async () => {
    const before = f.sources.snapshot().version;
    await f.putConfig(
      config((c) => {
        c.availableFeatures.push('rt-cfg.kyma-project.io/set-landscape');
        c.landscape = 'eu10';
      }),
    );
    const fixed = await f.nextVersion(before);
    for (const id of FIRST) await f.waitServed(id, fixed);
    const policy = await f.waitPhase('Complete');
    assert.equal(policy.status?.stable, `${fixed}/1.0.0`);
  });

  test('a runtime created mid-rollout gets the healthy revision; a restart continues where it was', async () => {
    const stable = f.sources.snapshot().version;
    await f.patchPolicy({
      waves: [{ name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '1h' }],
    });
    await f.putPullSecret('v3');
    const target = await f.nextVersion(stable);
    await f.waitServed('rt-1', target);
    await f.waitPhase('Soaking');
    await f.install('rt-5');
    await f.waitServed('rt-5', stable);
    // A restart in the middle: the same wave, soaking still, nobody else given the target.
    await f.start();
    await new Promise((r) => setTimeout(r, 1_500));
    const resumed = (await f.readPolicy()).status;
    assert.ok(resumed);
    assert.equal(resumed.phase, 'Soaking');
    assert.equal(resumed.waveName, 'canary');
    assert.equal(resumed.target, `${target}/1.0.0`);
    for (const id of [...REST, 'rt-5']) assert.equal((await f.readRb(id)).status?.appliedVersion, stable, id);
    // The soak ends: the rest, rt-5 with them, get the target.
    await f.patchPolicy({
      waves: [{ name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '0s' }],
    });
    for (const id of RUNTIMES) await f.waitServed(id, target);
    await f.waitPhase('Complete');
  });

  test('a release whose webhook never becomes ready halts at the canary and goes back to the release before', async () => {
    await f.patchPolicy({ healthDeadline: '5s' });
    const set = f.sources.snapshot().version;
    await f.start('2.0.0');
    // Nobody plays the kubelet for 2.0.0: the canary's new Deployment never becomes available.
    const halted = (await f.waitPhase('Halted')).status;
    assert.ok(halted);
    assert.equal(halted.target, `${set}/2.0.0`);
    assert.match(halted.haltReason ?? '', /rt-1: not healthy at .*\/2\.0\.0 within 5 s: Installing/);
    // The rollback reinstalls 1.0.0 on the canary (its Deployment made available, as a kubelet would).
    await eventually(async () =>
      (await f.readRb('rt-1')).status?.webhookVersion === '1.0.0' ? true : undefined,
    );
    await markDeploymentAvailable(f.rt('rt-1'));
    await f.waitServed('rt-1', set);
    for (const id of [...REST, 'rt-5'])
      assert.equal((await f.readRb(id)).status?.webhookVersion, '1.0.0', id);
    // The release taken back: the rollout of what runs everywhere completes at once.
    await f.start('1.0.0');
    await f.waitPhase('Complete');
  });

  test('a runtime unreachable in its wave counts against the threshold after the deadline and blocks nothing', async () => {
    await f.patchPolicy({ failureThreshold: 1, healthDeadline: '5s' });
    await f.webhooks.get('rt-4')?.stop();
    f.webhooks.delete('rt-4');
    await f.rt('rt-4').stop();
    const before = f.sources.snapshot().version;
    await f.putPullSecret('v4');
    const target = await f.nextVersion(before);
    for (const id of ['rt-1', 'rt-2', 'rt-3', 'rt-5']) await f.waitServed(id, target);
    const done = await f.waitPhase('Complete');
    const failures = done.status?.failures ?? [];
    assert.deepEqual(
      failures.map((f) => f.runtime),
      ['rt-4'],
    );
    assert.match(failures[0]?.reason ?? '', /not healthy at .* within 5 s/);
    // rtb status says the same from the KCP.
    const fleet = JSON.parse(
      await runStatus(
        { namespace: 'kcp-system', rolloutPolicy: 'default', output: 'json' },
        f.kcp().kubeConfig(),
      ),
    ) as FleetStatus;
    assert.equal(fleet.runtimes, 5);
    assert.equal(fleet.bySetVersion[target], 4);
    assert.deepEqual(fleet.byWebhookVersion, { '1.0.0': 5 });
    assert.equal(fleet.rollout?.phase, 'Complete');
    assert.deepEqual(
      fleet.failing.map((f) => f.runtime),
      ['rt-4'],
    );
  });
});
