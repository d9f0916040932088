import assert from 'node:assert/strict';
import type https from 'node:https';
import { describe, test } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import { applyObjects } from '../../src/kube/apply.js';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { reportDeploymentRollout } from '../../src/local/simulated-kubelet.js';
import { useControlPlane } from '../support/control-plane.js';

const plane = useControlPlane({ clusters: ['rt'] });
const PATH = '/apis/apps/v1/namespaces/default/deployments/web';

/** An access that counts the requests sent through it. */
function counting(inner: ClusterAccess): ClusterAccess & { requests: number } {
  const access = {
    requests: 0,
    requestLimits: inner.requestLimits,
    getCurrentCluster: () => inner.getCurrentCluster(),
    applyToHTTPSOptions: (o: https.RequestOptions) => {
      access.requests++;
      return inner.applyToHTTPSOptions(o);
    },
  };
  return access;
}

describe('the simulated kubelet', () => {
  test('reports a rollout, and writes no status that already says so', async () => {
    const kc = plane().cluster('rt').kubeConfig();
    assert.equal(await reportDeploymentRollout(kc, 'default', 'web', true), false, 'no Deployment yet');
    await applyObjects(kc, [
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: 'default' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'example.com/web:1' }] },
          },
        },
      } as object,
    ]);
    const read = (): Promise<V1Deployment> => kubeRequest<V1Deployment>(kc, { method: 'GET', path: PATH });

    const first = counting(kc);
    assert.equal(await reportDeploymentRollout(first, 'default', 'web', true), true);
    assert.equal(first.requests, 2, 'a read and the status written');
    const available = await read();
    assert.equal(available.status?.availableReplicas, 2);
    assert.equal(available.status.observedGeneration, available.metadata?.generation);
    assert.equal(available.status.conditions?.find((c) => c.type === 'Available')?.status, 'True');

    const again = counting(kc);
    assert.equal(await reportDeploymentRollout(again, 'default', 'web', true), true);
    assert.equal(again.requests, 1, 'the read alone');

    const down = counting(kc);
    assert.equal(await reportDeploymentRollout(down, 'default', 'web', false), true);
    assert.equal(down.requests, 2, 'a changed status is written');
    const stillDown = counting(kc);
    assert.equal(await reportDeploymentRollout(stillDown, 'default', 'web', false), true);
    assert.equal(stillDown.requests, 1, 'the read alone');
    const unavailable = await read();
    assert.equal(unavailable.status?.availableReplicas ?? 0, 0);
    assert.equal(unavailable.status?.conditions?.find((c) => c.type === 'Available')?.status, 'False');
  });
});
