// Idle, slow and lying clients on the webhook's port cannot deny the API server's calls: with
// connections of every hostile shape open (and renewed as the server closes them), each Pod
// created through a real kube-apiserver is mutated. The registration fails open, so a call the
// webhook did not answer in time would store the Pod unmutated.
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../../src/envtest/eventually.js';
import { MAX_REQUESTS_IN_FLIGHT } from '../../src/api/serving-limits.js';
import { useControlPlane } from '../support/control-plane.js';
import { HOSTILE_SHAPES, startHostileCrowd, type HostileCrowd } from '../support/hostile-clients.js';
import { registerFailingOpen, startTestWebhook, type TestWebhook } from '../support/webhook.js';
import { putSeedConfig } from '../support/webhook-runtime.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const FIPS = 'rt-cfg.kyma-project.io/set-fips-mode';
const DEFAULTED = 'rt-bootstrapper.kyma-project.io/defaulted';
/** More than the places in flight, as in the report (70). */
const PER_SHAPE = MAX_REQUESTS_IN_FLIGHT + 6;
let webhook: TestWebhook;
let core: CoreV1Api;

const pod = (name: string): V1Pod => ({
  metadata: { name, annotations: { [FIPS]: 'true' } },
  spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }] },
});

describe('hostile clients on the webhook port, through a real kube-apiserver', () => {
  before(async () => {
    const cluster = plane().cluster('runtime');
    core = cluster.kubeConfig().makeApiClient(CoreV1Api);
    await putSeedConfig(cluster);
    webhook = await startTestWebhook(cluster);
    await registerFailingOpen(cluster, webhook, pod('probe'));
  });

  after(async () => {
    await webhook.stop();
  });

  test(`with ${PER_SHAPE} connections of each hostile shape open, every Pod created is mutated`, async () => {
    const crowds: HostileCrowd[] = HOSTILE_SHAPES.map((shape) =>
      startHostileCrowd(shape, PER_SHAPE, { port: webhook.app.port }),
    );
    try {
      await eventually(
        () => (crowds.every((c) => c.open() === PER_SHAPE) ? true : undefined),
        20_000,
        'every hostile connection open',
      );
      // Their handshakes and headers reach the server.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      // Pods created one after another for longer than a body may take to arrive, so that
      // hostile connections are cut and renewed while the API server calls.
      const unmutated: string[] = [];
      for (let i = 0; i < 24; i++) {
        const name = `under-siege-${String(i)}`;
        const stored = await core.createNamespacedPod({ namespace: 'default', body: pod(name) });
        if (stored.metadata?.annotations?.[DEFAULTED] !== 'true') unmutated.push(name);
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
      assert.deepEqual(unmutated, [], 'Pods stored unmutated');
      assert.ok(
        crowds.some((c) => c.opened() > PER_SHAPE),
        'hostile connections were cut and opened again meanwhile',
      );
    } finally {
      for (const c of crowds) c.stop();
    }
  });
});
