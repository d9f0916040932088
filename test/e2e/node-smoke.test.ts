/**
 * The node itself: Pods pull the locally built image from the local registries, with and without
 * credentials, and the kubelet runs their probes. The webhook on the node: webhook-*.test.ts.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventually } from '../../src/envtest/eventually.js';
import { useNodeLandscape } from './support/node-landscape.js';
import { httpPod, POD_READY_MS, readyPod } from './support/pods.js';

const landscape = useNodeLandscape();

describe('a real node runs the locally built image', () => {
  test('a Pod pulls the image from the secured registry with a pull Secret and becomes Ready', async () => {
    const l = landscape();
    const core = l.plane.cluster('runtime').kubeConfig().makeApiClient(CoreV1Api);
    const namespace = 'default';
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: 'secured-registry' },
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': Buffer.from(l.secured.dockerConfigJson()).toString('base64') },
      },
    });
    await core.createNamespacedPod({
      namespace,
      body: httpPod('with-secret', l.securedImage, { pullSecret: 'secured-registry' }),
    });
    const pod = await readyPod(core, namespace, 'with-secret');
    assert.match(pod.status?.podIP ?? '', /^10\.213\.\d+\.\d+$/);
    assert.equal(pod.status?.containerStatuses?.[0]?.image, l.securedImage);
  });

  test('without the pull Secret the secured registry refuses the image', async () => {
    const l = landscape();
    const core = l.plane.cluster('runtime').kubeConfig().makeApiClient(CoreV1Api);
    // Always: the first test may have left the image on the node, and a present image needs no pull.
    await core.createNamespacedPod({
      namespace: 'default',
      body: httpPod('no-secret', l.securedImage, { pullAlways: true }),
    });
    const reason = await eventually(
      async () => {
        const p = await core.readNamespacedPod({ name: 'no-secret', namespace: 'default' });
        const waiting = p.status?.containerStatuses?.[0]?.state?.waiting;
        return waiting?.reason === 'ErrImagePull' || waiting?.reason === 'ImagePullBackOff'
          ? `${waiting.reason}: ${waiting.message ?? ''}`
          : undefined;
      },
      POD_READY_MS,
      'the pull to fail',
    );
    assert.match(reason, /401|unauthorized|authorization/i);
  });
});
