import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { rolloutPolicyPath, type RolloutPolicyResource } from '../../src/api/rollout-policy.js';
import { rolloutPolicyCrd } from '../../src/api/rollout-policy-crd.js';
import type { RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { startDirectMode } from '../../src/controller/direct/direct-mode.js';
import type { DirectMode } from '../../src/controller/direct/direct-mode-options.js';
import type { SourceWatcher } from '../../src/controller/sources/source-watcher.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { eventually, useControlPlane } from '../support/control-plane.js';
import { seedConfigText } from '../support/fixtures.js';
import {
  RB_PATH,
  asWebhookServiceAccount,
  coreOf,
  directModeOptions,
  markDeploymentAvailable,
  prepareKcp,
  putAdminKubeconfigSecret,
  putKcpConfig,
  putPullSecret as putKcpPullSecret,
  startKcpSources,
} from '../support/kcp.js';
import { startTestWebhook, type TestWebhook } from '../support/webhook.js';
import { runStatus } from '../../src/cli/commands/status-action.js';
import type { FleetStatus } from '../../src/controller/rollout/fleet-status.js';
import { newRuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';

/** rt-1 is the canary; rt-5 gets its RuntimeBootstrapper only in the middle of a rollout. */
const RUNTIMES = ['rt-1', 'rt-2', 'rt-3', 'rt-4', 'rt-5'] as const;
const FIRST = ['rt-1', 'rt-2', 'rt-3', 'rt-4'] as const;
const REST = ['rt-2', 'rt-3', 'rt-4'] as const;
const plane = useControlPlane({ clusters: ['kcp', ...RUNTIMES] });
const kcp = () => plane().cluster('kcp');
const rt = (id: string) => plane().cluster(id);

const readRb = (id: string) =>
  kubeRequest<RuntimeBootstrapper>(kcp().kubeConfig(), { method: 'GET', path: `${RB_PATH}/${id}` });
const readPolicy = () =>
  kubeRequest<RolloutPolicyResource>(kcp().kubeConfig(), {
    method: 'GET',
    path: rolloutPolicyPath('default'),
  });

async function createRb(id: string): Promise<void> {
  const labels: Record<string, string> = id === 'rt-1' ? { canary: 'true' } : {};
  await kubeRequest(kcp().kubeConfig(), {
    method: 'POST',
    path: RB_PATH,
    body: newRuntimeBootstrapper(id, 'kcp-system', { labels }),
  });
}

/** Sets the policy's spec fields given (merge patch). */
async function patchPolicy(
  spec: Record<string, unknown>,
  annotations?: Record<string, string>,
): Promise<void> {
  await kubeRequest(kcp().kubeConfig(), {
    method: 'PATCH',
    path: rolloutPolicyPath('default'),
    body: { spec, ...(annotations ? { metadata: { annotations } } : {}) },
  });
}

/** Replaces the KCP's pull Secret with one whose auth is `auth`. */
const putPullSecret = (auth: string): Promise<void> => putKcpPullSecret(kcp(), auth);
/** Replaces the KCP's webhook ConfigMap with `configText`. */
const putConfig = (configText: string): Promise<void> => putKcpConfig(kcp(), configText);

/** The seed config with `change` applied. */
function config(change: (c: { availableFeatures: string[]; landscape?: string }) => void): string {
  const c = JSON.parse(seedConfigText()) as { availableFeatures: string[]; landscape?: string };
  change(c);
  return JSON.stringify(c);
}

/** Waits for a new source-set version on the KCP and returns it. */
async function nextVersion(previous: string): Promise<string> {
  return eventually(() => (sources.snapshot().version !== previous ? sources.snapshot().version : undefined));
}

/** Waits until runtime `id` has set `version` applied and its webhook serves it. */
async function waitServed(id: string, version: string, timeoutMs = 40_000): Promise<void> {
  await eventually(
    async () => {
      const s = (await readRb(id)).status;
      return s?.state === 'Ready' && s.appliedVersion === version && s.servedVersion === version
        ? true
        : undefined;
    },
    timeoutMs,
    `${id} to serve ${version}`,
  );
}

async function waitPhase(phase: string, timeoutMs = 60_000): Promise<RolloutPolicyResource> {
  return eventually(
    async () => {
      const p = await readPolicy();
      return p.status?.phase === phase ? p : undefined;
    },
    timeoutMs,
    `the rollout to be ${phase}`,
  );
}

/** One sample of the fleet: the set version each RuntimeBootstrapper has applied and is served. */
type Sample = Record<string, { applied?: string; served?: string }>;

/** Samples the fleet until stopped, so a test can check an order that never may be broken. */
function trace(ids: readonly string[]): { stop(): Promise<Sample[]> } {
  const samples: Sample[] = [];
  const run = { on: true };
  const loop = (async () => {
    while (run.on) {
      const sample: Sample = {};
      for (const id of ids) {
        const s = (await readRb(id)).status;
        sample[id] = {
          ...(s?.appliedVersion !== undefined ? { applied: s.appliedVersion } : {}),
          ...(s?.servedVersion !== undefined ? { served: s.servedVersion } : {}),
        };
      }
      samples.push(sample);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      run.on = false;
      await loop;
      return samples;
    },
  };
}

/** Starts the real webhook on runtime `id` with its ServiceAccount's rights, reporting its status. */
async function startWebhookOn(id: string): Promise<void> {
  const hook = await startTestWebhook(rt(id), {
    kubeConfig: await asWebhookServiceAccount(rt(id)),
    statusConfigMap: { namespace: 'kyma-system', name: WEBHOOK_STATUS_CONFIG_MAP },
  });
  webhooks.set(id, hook);
}

/** Installs `id`: its RuntimeBootstrapper, the Deployment made available, its webhook started. */
async function install(id: string): Promise<void> {
  await createRb(id);
  await eventually(
    async () => ((await readRb(id)).status?.state === 'Installing' ? true : undefined),
    30_000,
  );
  await markDeploymentAvailable(rt(id));
  await eventually(async () => ((await readRb(id)).status?.state === 'Ready' ? true : undefined), 30_000);
  await startWebhookOn(id);
}

const webhooks = new Map<string, TestWebhook>();
let sources: SourceWatcher;
let direct: DirectMode;
let registry: Registry;
const logger = silentLogger();
const start = async (releaseVersion = '1.0.0'): Promise<DirectMode> => {
  registry = new Registry();
  return startDirectMode(
    directModeOptions(kcp(), sources, logger, {
      registry,
      release: { image: `example.com/rt-bootstrapper:${releaseVersion}`, version: releaseVersion },
      runtimeTimeoutMs: 3_000,
      rollout: { policyName: 'default', autoRollback: true },
    }),
  );
};
const metric = async (name: string): Promise<number> =>
  (await registry.getSingleMetric(name)?.get())?.values.reduce((a, v) => a + v.value, 0) ?? 0;

describe('progressive rollout: waves gated on health, halt and rollback, resume, restart', () => {
  before(async () => {
    await prepareKcp(kcp());
    await ensureCrds(kcp().kubeConfig(), [rolloutPolicyCrd()]);
    await kubeRequest(kcp().kubeConfig(), {
      method: 'POST',
      path: rolloutPolicyPath(),
      body: {
        apiVersion: 'rt-bootstrapper.kyma-project.io/v1alpha1',
        kind: 'RolloutPolicy',
        metadata: { name: 'default' },
        spec: {
          waves: [{ name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '3s' }],
          failureThreshold: 0,
          healthDeadline: '60s',
        },
      },
    });
    for (const id of RUNTIMES) await putAdminKubeconfigSecret(kcp(), rt(id), id);
    sources = await startKcpSources(kcp(), logger);
    direct = await start();
    for (const id of FIRST) await install(id);
  });
  after(async () => {
    for (const w of webhooks.values()) await w.stop();
    await direct.stop();
    await sources.stop();
  });

  test('the revision in force is adopted: every runtime serves it, the policy says Complete', async () => {
    const version = sources.snapshot().version;
    for (const id of FIRST) await waitServed(id, version);
    const policy = await waitPhase('Complete');
    assert.equal(policy.status?.stable, `${version}/1.0.0`);
    assert.equal((await readRb('rt-1')).status?.rolloutWave, 'canary');
    assert.equal((await readRb('rt-2')).status?.rolloutWave, 'rest');
  });

  test('a good change walks the canary first, and the rest only after the canary soaked', async () => {
    const before = sources.snapshot().version;
    const t = trace(FIRST);
    await putPullSecret('v2');
    const version = await nextVersion(before);
    for (const id of FIRST) await waitServed(id, version);
    const samples = await t.stop();
    const policy = await waitPhase('Complete');
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
    const stable = sources.snapshot().version;
    const t = trace(FIRST);
    const rollbacks = await metric('rtb_rollout_rollbacks_total');
    // The KCP accepts it (set-landscape needs a landscape only where it runs); each webhook refuses it.
    await putConfig(config((c) => c.availableFeatures.push('rt-cfg.kyma-project.io/set-landscape')));
    const bad = await nextVersion(stable);
    const halted = await waitPhase('Halted');
    assert.match(halted.status?.haltReason ?? '', /rt-1: the webhook refused set/);
    assert.match(halted.status?.haltReason ?? '', /set-landscape/);
    assert.deepEqual(
      halted.status?.failures?.map((f) => f.runtime),
      ['rt-1'],
    );
    await waitServed('rt-1', stable);
    const samples = await t.stop();
    assert.ok(
      samples.some((s) => s['rt-1']?.applied === bad),
      'the canary got the bad set',
    );
    for (const s of samples) for (const id of REST) assert.equal(s[id]?.applied, stable, `${id} was touched`);
    const cm = await coreOf(rt('rt-1')).readNamespacedConfigMap({
      name: 'rt-bootstrapper-config',
      namespace: 'kyma-system',
    });
    assert.ok(
      !cm.data?.['rt-bootstrapper-config.json']?.includes('set-landscape'),
      'the good config is back',
    );
    assert.ok((await metric('rtb_rollout_rollbacks_total')) > rollbacks);
    assert.ok((await metric('rtb_rollout_halts_total')) >= 1);
    // Still halted on later passes, the bad set with nobody.
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal((await readPolicy()).status?.phase, 'Halted');
    for (const id of FIRST) assert.equal((await readRb(id)).status?.appliedVersion, stable);
  });

  test('a fixed config resumes: canary, then the rest', async () => {
    const before = sources.snapshot().version;
    await putConfig(
      config((c) => {
        c.availableFeatures.push('rt-cfg.kyma-project.io/set-landscape');
        c.landscape = 'eu10';
      }),
    );
    const fixed = await nextVersion(before);
    for (const id of FIRST) await waitServed(id, fixed);
    const policy = await waitPhase('Complete');
    assert.equal(policy.status?.stable, `${fixed}/1.0.0`);
  });

  test('a runtime created mid-rollout gets the healthy revision; a restart continues where it was', async () => {
    const stable = sources.snapshot().version;
    await patchPolicy({
      waves: [{ name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '1h' }],
    });
    await putPullSecret('v3');
    const target = await nextVersion(stable);
    await waitServed('rt-1', target);
    await waitPhase('Soaking');
    await install('rt-5');
    await waitServed('rt-5', stable);
    // A restart in the middle: the same wave, soaking still, nobody else given the target.
    await direct.stop();
    direct = await start();
    await new Promise((r) => setTimeout(r, 1_500));
    const resumed = (await readPolicy()).status;
    assert.ok(resumed);
    assert.equal(resumed.phase, 'Soaking');
    assert.equal(resumed.waveName, 'canary');
    assert.equal(resumed.target, `${target}/1.0.0`);
    for (const id of [...REST, 'rt-5']) assert.equal((await readRb(id)).status?.appliedVersion, stable, id);
    // The soak ends: the rest, rt-5 with them, get the target.
    await patchPolicy({
      waves: [{ name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '0s' }],
    });
    for (const id of RUNTIMES) await waitServed(id, target);
    await waitPhase('Complete');
  });

  test('a release whose webhook never becomes ready halts at the canary and goes back to the release before', async () => {
    await patchPolicy({ healthDeadline: '5s' });
    const set = sources.snapshot().version;
    await direct.stop();
    direct = await start('2.0.0');
    // Nobody plays the kubelet for 2.0.0: the canary's new Deployment never becomes available.
    const halted = (await waitPhase('Halted')).status;
    assert.ok(halted);
    assert.equal(halted.target, `${set}/2.0.0`);
    assert.match(halted.haltReason ?? '', /rt-1: not healthy at .*\/2\.0\.0 within 5 s: Installing/);
    // The rollback reinstalls 1.0.0 on the canary (its Deployment made available, as a kubelet would).
    await eventually(async () =>
      (await readRb('rt-1')).status?.webhookVersion === '1.0.0' ? true : undefined,
    );
    await markDeploymentAvailable(rt('rt-1'));
    await waitServed('rt-1', set);
    for (const id of [...REST, 'rt-5']) assert.equal((await readRb(id)).status?.webhookVersion, '1.0.0', id);
    // The release taken back: the rollout of what runs everywhere completes at once.
    await direct.stop();
    direct = await start('1.0.0');
    await waitPhase('Complete');
  });

  test('a runtime unreachable in its wave counts against the threshold after the deadline and blocks nothing', async () => {
    await patchPolicy({ failureThreshold: 1, healthDeadline: '5s' });
    await webhooks.get('rt-4')?.stop();
    webhooks.delete('rt-4');
    await rt('rt-4').stop();
    const before = sources.snapshot().version;
    await putPullSecret('v4');
    const target = await nextVersion(before);
    for (const id of ['rt-1', 'rt-2', 'rt-3', 'rt-5']) await waitServed(id, target);
    const done = await waitPhase('Complete');
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
        kcp().kubeConfig(),
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
