// test-matrix: kubernetes
/**
 * Direct mode shows what a runtime's trust-bundle restarter reports (its annotation on the webhook
 * Deployment) in the RuntimeBootstrapper status and its printer column, on real API servers; a
 * pass that finds the same report writes nothing.
 */
import assert from 'node:assert/strict';
import { get, type RequestOptions } from 'node:https';
import { after, before, describe, test } from 'node:test';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT } from '../../src/api/runtime-names.js';
import {
  RESTARTER_FIELD_MANAGER,
  TRUST_STATUS_ANNOTATION,
  trustBundleHash,
} from '../../src/api/trust-stamp.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import {
  trustStatusValue,
  type RestartCounts,
} from '../../src/runtime-agent/trust-restart/restart-status.js';
import { eventually } from '../../src/envtest/eventually.js';
import { useControlPlane } from '../support/control-plane.js';
import { DirectFleet } from '../support/direct-fleet.js';
import { CTB_NAME, RB_PATH, markDeploymentAvailable } from '../support/kcp.js';
import { readTrustBundle } from '../support/trust-bundles.js';

const ID = 'rt-trust';
const plane = useControlPlane({ clusters: ['kcp', ID] });
const kcp = () => plane().cluster('kcp');
const rt = () => plane().cluster(ID);
const fleet = new DirectFleet(kcp);
const readRb = () => fleet.readRb(ID);

/** Writes the restarter's report on the runtime's webhook Deployment, as the restarter does. */
async function report(bundle: string, counts: RestartCounts): Promise<void> {
  await kubeRequest(rt().kubeConfig(), {
    method: 'PATCH',
    path: `/apis/apps/v1/namespaces/${RUNTIME_NAMESPACE}/deployments/${WEBHOOK_DEPLOYMENT}`,
    query: { fieldManager: RESTARTER_FIELD_MANAGER },
    body: {
      metadata: { annotations: { [TRUST_STATUS_ANNOTATION]: trustStatusValue(bundle, counts, new Date()) } },
    },
  });
}

/** The object at `path` as the API server's Table (what `kubectl get` prints). */
async function asTable(
  path: string,
): Promise<{ columnDefinitions: { name: string }[]; rows: { cells: unknown[] }[] }> {
  const kc = kcp().kubeConfig();
  const options: RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const url = new URL(`${kc.getCurrentCluster()?.server ?? ''}${path}`);
  const headers = {
    ...(options.headers as Record<string, string>),
    Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
  };
  return new Promise((resolve, reject) => {
    get(url, { ...options, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as never);
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
      });
    }).on('error', reject);
  });
}

/** Reconciles run so far (every result). */
const reconciles = (): Promise<number> => fleet.metric('controller_runtime_reconcile_total');

describe("direct mode: the runtime's trust-bundle restarts in the RuntimeBootstrapper status", () => {
  before(async () => {
    await fleet.prepare({ [ID]: rt() });
    await fleet.start({ runtimeTimeoutMs: 3_000, trustPollMs: 200 });
  });
  after(() => fleet.stop());

  test('the annotation on the webhook Deployment shows in the status and the Stale-Pods column; the same report writes nothing', async () => {
    await fleet.create(ID);
    await fleet.waitState(ID, 'Installing');
    await markDeploymentAvailable(rt());
    const ready = await fleet.waitState(ID, 'Ready');
    assert.equal(ready.status?.trustRestart, undefined, 'no restarter has reported');

    // The KCP's bundle, as the runtime's restarter names it (the set carries it to the runtime).
    const ctb = await readTrustBundle(kcp().kubeConfig(), CTB_NAME);
    assert.ok(ctb);
    const hash = trustBundleHash(ctb.spec.trustBundle);
    await report(hash, { stalePods: 4, barePods: 1, optedOutPods: 2 });
    // A forced pass reads the Deployment anyway (its rollout); the count comes with that read.
    assert.ok(fleet.direct.resync(ID));
    const shown = await fleet.waitFor(
      ID,
      (rb) => rb.status?.trustRestart?.stalePods === 4,
      30_000,
      'the count in the status',
    );
    const { reportedAt, ...counts } = shown.status?.trustRestart ?? { reportedAt: undefined };
    assert.deepEqual(counts, { bundle: hash.slice(0, 12), stalePods: 4, barePods: 1, optedOutPods: 2 });
    assert.ok(reportedAt !== undefined && !Number.isNaN(Date.parse(reportedAt)));

    const table = await asTable(`${RB_PATH}/${ID}`);
    const column = table.columnDefinitions.findIndex((c) => c.name === 'Stale-Pods');
    assert.ok(column >= 0, 'a Stale-Pods printer column');
    assert.equal(table.rows[0]?.cells[column], 4);

    // Restarts under way: the KCP looks again on its own. The same report writes nothing.
    const rv = shown.metadata.resourceVersion;
    const start = await reconciles();
    await eventually(
      async () => ((await reconciles()) >= start + 3 ? true : undefined),
      30_000,
      'three more looks',
    );
    assert.equal((await readRb()).metadata.resourceVersion, rv, 'no status write for the same count');

    // The restarts went on: the next look brings the new count, with no resync asked for.
    await report(hash, { stalePods: 1, barePods: 1, optedOutPods: 2 });
    await fleet.waitFor(ID, (rb) => rb.status?.trustRestart?.stalePods === 1, 30_000, 'the new count');
    // Only a bare Pod is left (never restarted): no more looks, nothing written.
    const settled = await readRb();
    const at = await reconciles();
    assert.ok(fleet.direct.resync(ID));
    await eventually(async () => ((await reconciles()) > at ? true : undefined), 30_000, 'one more pass');
    assert.equal((await readRb()).metadata.resourceVersion, settled.metadata.resourceVersion);
  });
});
