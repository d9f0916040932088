/**
 * The runtime agent on a real API server (docs/runtime-agent.md): one leader among the webhook's
 * replicas runs its parts (workload health without the trust restarter too), and an upgrade from
 * a release whose trust restarter held the Lease never runs two restarters at once.
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { RESTARTER_LEASE } from '../../src/api/trust-stamp.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { REVISION_ANNOTATION, REVISION_LABEL } from '../../src/api/workload-health.js';
import { eventually } from '../../src/envtest/eventually.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { LeaderElector } from '../../src/kube/leader-election.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { useControlPlane } from '../support/control-plane.js';
import { seedConfigText } from '../support/fixtures.js';
import { startTestWebhook, type TestWebhook } from '../support/webhook.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 };
const STATUS = { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP };
let admin: KubeConfig;
const running: TestWebhook[] = [];

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function replica(identity: string, trustRestart: boolean): Promise<TestWebhook> {
  const hook = await startTestWebhook(plane().cluster('runtime'), {
    statusConfigMap: STATUS,
    trustRestart: trustRestart
      ? { pacing: { delayMs: 500 }, pollMs: 200, idleMs: 300, statusDeployment: false }
      : undefined,
    runtimeAgent: { identity, leaseTiming: TIMING },
  });
  running.push(hook);
  return hook;
}

async function stop(hook: TestWebhook): Promise<void> {
  running.splice(running.indexOf(hook), 1);
  await hook.stop();
}

async function holder(): Promise<string | undefined> {
  const lease = await kubeRequest<{ spec?: { holderIdentity?: string } }>(admin, {
    method: 'GET',
    path: `/apis/coordination.k8s.io/v1/namespaces/${RUNTIME_NAMESPACE}/leases/${RESTARTER_LEASE}`,
  });
  return lease.spec?.holderIdentity;
}

/** The Pods this replica's workload follower follows now (0 unless it leads). */
async function followed(hook: TestWebhook): Promise<number> {
  const metric = await hook.app.registry.getSingleMetric('rtb_webhook_workload_followed_pods')?.get();
  return (metric?.values ?? []).reduce((sum, v) => sum + v.value, 0);
}

describe('the runtime agent', () => {
  before(async () => {
    admin = plane().cluster('runtime').kubeConfig();
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: RUNTIME_NAMESPACE } } });
    await core.createNamespacedConfigMap({
      namespace: RUNTIME_NAMESPACE,
      body: {
        metadata: { name: 'rt-bootstrapper-config' },
        data: { 'rt-bootstrapper-config.json': seedConfigText() },
      },
    });
    // The status ConfigMap the follower reads its predecessor's report from (the KCP's install has it).
    await core.createNamespacedConfigMap({
      namespace: STATUS.namespace,
      body: { metadata: { name: STATUS.name } },
    });
    // A Pod as our admission leaves it (stamped with a revision): the follower follows it.
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: {
          name: 'stamped',
          labels: { [REVISION_LABEL]: 'v1' },
          annotations: { [REVISION_ANNOTATION]: 'v1' },
        },
        spec: { containers: [{ name: 'app', image: 'example.com/app:1' }] },
      },
    });
  });
  after(async () => {
    for (const hook of running.splice(0)) await hook.stop();
  });

  test('without --trust-restart one replica of two leads the agent (the standby follows no Pod); the other takes over when it stops', async () => {
    const a = await replica('replica-a', false);
    const b = await replica('replica-b', false);
    assert.equal(a.app.restarter, undefined, 'no trust restarter was asked for');
    const leader = await eventually(
      () => [a, b].find((h) => h.app.agent.isLeader()),
      30_000,
      'one replica to lead the agent',
    );
    const standby = leader === a ? b : a;
    // Several lease periods: never both, never the standby's follower.
    for (let i = 0; i < 12; i++) {
      assert.deepEqual(
        [leader.app.agent.isLeader(), standby.app.agent.isLeader()],
        [true, false],
        'exactly one replica leads',
      );
      await sleep(250);
    }
    assert.equal(await followed(standby), 0, 'the standby follows nothing');
    assert.equal(standby.app.agent.termsLed(), 0);

    await stop(leader);
    await eventually(() => (standby.app.agent.isLeader() ? true : undefined), 30_000, 'the standby to lead');
    assert.equal(standby.app.agent.termsLed(), 1);
    await stop(standby);
  });

  test('an upgrade: while a replica of the earlier release holds the restarter’s Lease, no part of the agent runs; once it is gone, the agent takes over', async () => {
    for (const hook of running.splice(0)) await hook.stop();
    // The earlier release's restarter elected itself on this Lease with this very elector.
    const old = new LeaderElector({
      kubeConfig: admin,
      namespace: RUNTIME_NAMESPACE,
      name: RESTARTER_LEASE,
      identity: 'earlier-release-replica',
      timing: TIMING,
      logger: silentLogger(),
    });
    old.start({ onStartedLeading: () => undefined, onStoppedLeading: () => undefined });
    try {
      await upgrade(old);
    } finally {
      await old.stop({ release: false });
    }
  });
});

/** The upgrade case, while `old` (the earlier release's candidate) runs. */
async function upgrade(old: LeaderElector): Promise<void> {
  await eventually(() => (old.isLeader() ? true : undefined), 30_000, 'the earlier release to lead');

  const hook = await replica('new-release-replica', true);
  const restarter = hook.app.restarter;
  assert.ok(restarter);
  // Six lease durations of the earlier replica renewing: nothing of the agent runs here.
  for (let i = 0; i < 48; i++) {
    assert.equal(hook.app.agent.isLeader(), false, 'the new agent does not lead');
    assert.equal(restarter.isActive(), false, 'no second restarter');
    await sleep(250);
  }
  assert.equal(hook.app.agent.termsLed(), 0);
  assert.equal(restarter.passes(), 0, 'the new restarter planned nothing');
  assert.equal(await followed(hook), 0, 'the new follower follows nothing');
  assert.equal(await holder(), 'earlier-release-replica');

  // The earlier replica goes away without releasing (as a Pod killed in a rollout may).
  await old.stop({ release: false });
  await eventually(() => (restarter.isActive() ? true : undefined), 30_000, 'the new restarter to run');
  assert.equal(hook.app.agent.isLeader(), true);
  assert.equal(await holder(), 'new-release-replica');
}
