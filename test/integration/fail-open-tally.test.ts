/**
 * The fail-open tally on a real API server: a webhook nobody serves, failing open on a Pod create,
 * is counted by the API server and written to `$RTB_FAIL_OPEN_TALLY` when the cluster stops.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { AdmissionregistrationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { ControlPlane, type LocalCluster } from '../../src/envtest/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { FAIL_OPEN_METRIC, sumFailOpens } from '../../src/envtest/fail-open-tally.js';
import { freePort } from '../../src/envtest/free-port.js';
import { apiServerMetric } from '../support/apiserver-metrics.js';

const failOpens = (cluster: LocalCluster) => apiServerMetric(cluster, FAIL_OPEN_METRIC, {});

describe('the fail-open tally on a real API server', () => {
  test('a call to an unserved webhook that fails open is recorded when the cluster stops', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rtb-fail-open-'));
    const file = join(dir, 'tally.jsonl');
    const saved = process.env.RTB_FAIL_OPEN_TALLY;
    process.env.RTB_FAIL_OPEN_TALLY = file;
    const plane = await ControlPlane.start({ clusters: ['quiet', 'runtime'] });
    try {
      const runtime = plane.cluster('runtime');
      const port = await freePort(); // nothing listens there
      await runtime
        .kubeConfig()
        .makeApiClient(AdmissionregistrationV1Api)
        .createMutatingWebhookConfiguration({
          body: {
            metadata: { name: 'unserved' },
            webhooks: [
              {
                name: 'unserved.example.com',
                admissionReviewVersions: ['v1'],
                sideEffects: 'None',
                failurePolicy: 'Ignore',
                timeoutSeconds: 1,
                clientConfig: { url: `https://127.0.0.1:${port}/mutate` },
                rules: [
                  { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] },
                ],
              },
            ],
          },
        });
      const core = runtime.kubeConfig().makeApiClient(CoreV1Api);
      const pod = (name: string) => ({
        metadata: { name },
        spec: { containers: [{ name: 'c', image: 'example.com/app:1' }] },
      });
      let i = 0;
      /** Creates Pods (dry run) until one more call has failed open. */
      const failOpen = async () => {
        const before = await failOpens(runtime);
        await eventually(
          async () => {
            await core.createNamespacedPod({ namespace: 'default', body: pod(`p-${i++}`), dryRun: 'All' });
            return (await failOpens(runtime)) > before ? true : undefined;
          },
          20_000,
          'a call failed open',
        );
      };
      await failOpen();
      // A restart inside the test ends the counter: what it counted is kept.
      await runtime.stop();
      await runtime.start();
      await failOpen();
      await plane.stop();
      const counts = sumFailOpens(await readFile(file, 'utf8'));
      assert.ok((counts['unserved.example.com'] ?? 0) >= 2, JSON.stringify(counts));
      assert.deepEqual(Object.keys(counts), ['unserved.example.com'], 'the quiet cluster recorded nothing');
    } finally {
      await plane.stop();
      if (saved === undefined) delete process.env.RTB_FAIL_OPEN_TALLY;
      else process.env.RTB_FAIL_OPEN_TALLY = saved;
      await rm(dir, { recursive: true, force: true });
    }
  });
});
