/**
 * A rollout under way wakes its runtime's pass when it moves, on a real API server: the watch of
 * the webhook Deployment (src/controller/direct/rollout-watch.ts) against kube-apiserver's own
 * watch semantics (an expired resourceVersion, a status change that moves nothing), and direct
 * mode waiting on it instead of polling.
 */
import { AppsV1Api, CoreV1Api, type V1Deployment } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { before, describe, test } from 'node:test';
import { deploymentRollout, type RolloutDeployment } from '../../src/controller/direct/deployment-rollout.js';
import { RolloutWatches, trustSeen, type SeenRollout } from '../../src/controller/direct/rollout-watch.js';
import { eventually } from '../../src/envtest/eventually.js';
import { createListerWatcher } from '../../src/kube/list-watch.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT, WEBHOOK_SERVICE } from '../../src/api/runtime-names.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { apiServerMetric } from '../support/apiserver-metrics.js';
import { useControlPlane } from '../support/control-plane.js';
import { DirectFleet } from '../support/direct-fleet.js';
import { markDeploymentAvailable } from '../support/kcp.js';
import { readWebhookDeployment } from '../support/webhook-deployment.js';

const ID = 'rt-rollout';
/** A runtime whose first install is registered on Ready Pods the Service lists. */
const FIRST = 'rt-first';
const plane = useControlPlane({ clusters: ['kcp', ID, FIRST] });
const kcp = () => plane().cluster('kcp');
const rt = () => plane().cluster(ID);
const first = () => plane().cluster(FIRST);
const NS = 'rollout-watch';
const NAME = 'web';

const apps = () => rt().kubeConfig().makeApiClient(AppsV1Api);
const lw = () =>
  createListerWatcher<RolloutDeployment>(rt().kubeConfig(), `/apis/apps/v1/namespaces/${NS}/deployments`);

/** What a pass saw of the test Deployment now. */
async function seen(): Promise<SeenRollout> {
  const d = await apps().readNamespacedDeployment({ name: NAME, namespace: NS });
  return {
    resourceVersion: d.metadata?.resourceVersion ?? '',
    message: deploymentRollout(d).message,
    trust: trustSeen(undefined),
  };
}

/** Writes the Deployment's status (no controller runs here: the test plays the deployment controller). */
async function setStatus(status: NonNullable<V1Deployment['status']>): Promise<void> {
  await kubeRequest(rt().kubeConfig(), {
    method: 'PATCH',
    path: `/apis/apps/v1/namespaces/${NS}/deployments/${NAME}/status`,
    body: { status },
  });
}

/** Watch requests open on the runtime's API server for Deployments. */
const deploymentWatches = (): Promise<number> =>
  apiServerMetric(rt(), 'apiserver_longrunning_requests', { verb: 'WATCH', resource: 'deployments' });

/** Writes the webhook Deployment's rollout counts on `c` (no deployment controller runs here). */
async function setWebhookStatus(
  c: LocalCluster,
  counts: { replicas: number; updatedReplicas: number; readyReplicas: number },
): Promise<void> {
  const d = await readWebhookDeployment(c.kubeConfig());
  await kubeRequest(c.kubeConfig(), {
    method: 'PATCH',
    path: `/apis/apps/v1/namespaces/${RUNTIME_NAMESPACE}/deployments/${WEBHOOK_DEPLOYMENT}/status`,
    body: { status: { observedGeneration: d.metadata?.generation ?? 1, availableReplicas: 0, ...counts } },
  });
}

/** An EndpointSlice of the webhook Service on `c` listing `n` ready endpoints (no endpoint controller runs). */
async function putReadyEndpoints(c: LocalCluster, n: number): Promise<void> {
  await kubeRequest(c.kubeConfig(), {
    method: 'POST',
    path: `/apis/discovery.k8s.io/v1/namespaces/${RUNTIME_NAMESPACE}/endpointslices`,
    body: {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: `${WEBHOOK_SERVICE}-test`,
        labels: { 'kubernetes.io/service-name': WEBHOOK_SERVICE },
      },
      addressType: 'IPv4',
      endpoints: Array.from({ length: n }, (_, i) => ({
        addresses: [`10.0.0.${i + 1}`],
        conditions: { ready: true },
      })),
      ports: [{ name: 'https', port: 9443, protocol: 'TCP' }],
    },
  });
}

describe('a rollout under way is followed by a watch on a real API server', () => {
  before(async () => {
    await rt()
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: NS } } });
    await apps().createNamespacedDeployment({
      namespace: NS,
      body: {
        metadata: { name: NAME },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: NAME } },
          template: {
            metadata: { labels: { app: NAME } },
            spec: { containers: [{ name: 'c', image: 'example.com/web:1' }] },
          },
        },
      },
    });
  });

  test('a status change that leaves the rollout as seen wakes nothing; available at last wakes the runtime', async () => {
    const woken: string[] = [];
    const watches = new RolloutWatches({ wake: (k) => woken.push(k), logger: silentLogger() });
    try {
      // Observed by the deployment controller, nothing available yet.
      await setStatus({ observedGeneration: 1, replicas: 2 });
      assert.equal(watches.follow('ns/a', lw(), NAME, await seen()), true);
      await eventually(
        async () => ((await deploymentWatches()) === 1 ? true : undefined),
        10_000,
        'the watch',
      );
      // A condition more, the same counts: the rollout has not moved.
      await setStatus({
        observedGeneration: 1,
        conditions: [{ type: 'Progressing', status: 'True', reason: 'NewReplicaSetCreated' }],
      });
      await sleep(1_000);
      assert.deepEqual(woken, []);
      await setStatus({
        observedGeneration: 1,
        replicas: 2,
        updatedReplicas: 2,
        readyReplicas: 2,
        availableReplicas: 2,
      });
      await eventually(() => (woken.length > 0 ? true : undefined), 10_000, 'the wake');
      assert.deepEqual(woken, ['ns/a']);
      await eventually(async () => ((await deploymentWatches()) === 0 ? true : undefined), 10_000, 'the end');
    } finally {
      watches.stop();
    }
  });

  test('a watch the server refuses fails: the runtime is woken (it reads again), then polled for a while', async () => {
    const woken: string[] = [];
    const watches = new RolloutWatches({ wake: (k) => woken.push(k), logger: silentLogger() });
    try {
      const refused = createListerWatcher<RolloutDeployment>(
        rt().kubeConfig(),
        `/apis/apps/v1/namespaces/${NS}/no-such-resource`,
      );
      assert.equal(watches.follow('ns/b', refused, NAME, await seen()), true);
      await eventually(() => (woken.length > 0 ? true : undefined), 10_000, 'the wake');
      assert.equal(watches.follow('ns/b', lw(), NAME, await seen()), false, 'polled for a while');
    } finally {
      watches.stop();
    }
  });
});

describe('direct mode waits for the webhook rollout on a watch, not a poll', () => {
  const fleet = new DirectFleet(kcp);
  fleet.use(() => ({ [ID]: rt(), [FIRST]: first() }), { runtimeTimeoutMs: 3_000 });

  test('Installing: one watch follows the Deployment and no pass runs until it moves; available: Ready, the watch gone', async () => {
    await fleet.create(ID);
    await fleet.waitState(ID, 'Installing');
    await eventually(async () => ((await deploymentWatches()) === 1 ? true : undefined), 10_000, 'the watch');
    const passes = await fleet.metric('controller_runtime_reconcile_total');
    // A poll would have run a pass at least once in this time.
    await sleep(7_000);
    assert.equal(await fleet.metric('controller_runtime_reconcile_total'), passes, 'no pass while waiting');
    await markDeploymentAvailable(rt());
    const ready = await fleet.waitState(ID, 'Ready');
    assert.equal(ready.status?.conditions?.find((c) => c.type === 'WebhookReady')?.status, 'True');
    await eventually(async () => ((await deploymentWatches()) === 0 ? true : undefined), 10_000, 'the end');
    assert.equal(deploymentRollout(await readWebhookDeployment(rt().kubeConfig())).ready, true);
  });
  test('a first install is registered once its new Pods are Ready and listed by the Service, before minReadySeconds', async () => {
    await fleet.create(FIRST);
    await fleet.waitState(FIRST, 'Installing');
    const installing = async (why: string): Promise<void> => {
      // Passes look again every 500 ms while Pods wait to be listed: 2 s is several of them.
      await sleep(2_000);
      assert.equal((await fleet.readRb(FIRST)).status?.state, 'Installing', why);
    };
    // Both new Pods Ready, none available yet (minReadySeconds), the Service lists none.
    await setWebhookStatus(first(), { replicas: 2, updatedReplicas: 2, readyReplicas: 2 });
    await installing('the Service lists no Pod yet');
    // A Pod of the old template left (a takeover's): its endpoints are handed over by availability.
    await setWebhookStatus(first(), { replicas: 3, updatedReplicas: 2, readyReplicas: 2 });
    await putReadyEndpoints(first(), 2);
    await installing('an old Pod is left');
    await setWebhookStatus(first(), { replicas: 2, updatedReplicas: 2, readyReplicas: 2 });
    const ready = await fleet.waitState(FIRST, 'Ready');
    assert.equal(ready.status?.conditions?.find((c) => c.type === 'WebhookReady')?.status, 'True');
    assert.equal(
      deploymentRollout(await readWebhookDeployment(first().kubeConfig())).ready,
      false,
      'none available',
    );
  });
});
