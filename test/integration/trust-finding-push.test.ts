/**
 * The webhook pushes a new trust-bundle finding to the KCP (docs/trust-bundle-api.md, "Kubelet
 * skew"), on real 1.37 API servers: direct mode with the drift channel and its resync far off
 * ({@link RESYNC_MS}), a runtime serving MutatingAdmissionPolicy whose policy mounts the trust bundle (its
 * webhook found the projection kept), then a Node reporting kubelet 1.34 appears (created through
 * the API, no kubelet behind it). The webhook writes `KubeletTooOld` to its status ConfigMap and
 * sends one drift event naming it; the KCP forces a pass of that runtime, which reads it, and the
 * policy's parameters lose the mount within seconds. Without the push nothing would read the report
 * before the next full resync (or the workloads' look at rest), far beyond the bound here.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { readReport, WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { eventually } from '../../src/envtest/eventually.js';
import { KUBERNETES_VERSIONS } from '../../src/envtest/kubernetes-versions.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { ADMISSION_POLICY_NAME } from '../../src/render/admission-policy.js';
import { PARAM_KEYS } from '../../src/render/admission-policy-params.js';
import { useControlPlane } from '../support/control-plane.js';
import { getIfExists } from '../support/get-if-exists.js';
import { putLegacyNode } from '../support/legacy-node.js';
import { conditionOf, DirectFleet, writeDriftClientFiles } from '../support/direct-fleet.js';
import { startTestWebhook } from '../support/webhook.js';

const ID = 'rt-push';
// 1.37 whatever the matrix runs: ClusterTrustBundle at v1 only (a 1.34 kubelet cannot read it)
// and MutatingAdmissionPolicy at v1.
const VERSION = KUBERNETES_VERSIONS['1.37'];
const plane = useControlPlane({
  kubernetes: '1.37',
  clusters: ['kcp', ID],
  apiserverArgs: VERSION.admissionPolicy.apiserverArgs,
});
const kcp = () => plane().cluster('kcp');
const rt = () => plane().cluster(ID);
const fleet = new DirectFleet(kcp);
/** Far below the resync (and the workloads' look at rest): only the push gets there in time. */
const PUSH_BOUND_MS = 20_000;
const RESYNC_MS = 10 * 60_000;
const paramsPath = `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/${ADMISSION_POLICY_NAME}`;
/** The parameters' keys of the trust-bundle mount. */
const MOUNT_KEYS = Object.values(PARAM_KEYS).filter((k) => k.startsWith('trustBundle'));
let dir = '';

/** The mount keys the policy's parameters on the runtime hold (undefined: no parameters). */
async function mountKeys(): Promise<string[] | undefined> {
  const cm = await getIfExists<{ data?: Record<string, string> }>(rt().kubeConfig(), paramsPath);
  return cm === undefined ? undefined : MOUNT_KEYS.filter((k) => cm.data?.[k] !== undefined);
}

/** The webhook's finding as its status ConfigMap holds it. */
async function reported() {
  const cm = await kubeRequest<{ data?: Record<string, string> }>(rt().kubeConfig(), {
    method: 'GET',
    path: `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/${WEBHOOK_STATUS_CONFIG_MAP}`,
  }).catch(() => undefined);
  return readReport(cm).trustBundle;
}

describe('direct mode with the drift channel: a new trust-bundle finding is pushed, not polled', () => {
  fleet.use(() => ({ [ID]: rt() }), {
    withDriftListener: true,
    resyncMs: RESYNC_MS,
    runtimeTimeoutMs: 5_000,
  });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rtb-push-'));
    await fleet.create(ID, { 'skr-domain': `${ID}.kyma.example.com` });
    const ready = await fleet.waitReady(ID, rt());
    assert.equal(
      ready.status?.admissionPolicyAPI,
      `admissionregistration.k8s.io/${VERSION.admissionPolicy.api}`,
    );
    const files = await writeDriftClientFiles(rt(), join(dir, 'drift'));
    const hook = await startTestWebhook(rt(), {
      statusConfigMap: { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP },
      // No attestation within the test: an out-of-sync one would force a pass too.
      drift: { url: fleet.driftUrl, ...files, attestationInitialDelayMs: 24 * 3600_000 },
    });
    fleet.onStop(() => hook.stop());
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('the projection reported kept: the policy mounts the trust bundle', async () => {
    const found = await eventually(reported, 30_000, 'the finding in the status ConfigMap');
    assert.equal(found.projection, 'kept');
    assert.equal(found.kubelets, undefined);
    // The parameters take the mount on the pass after the condition turned True: forced here.
    let resyncedAt = 0;
    await eventually(
      async () => {
        const rb = await fleet.readRb(ID);
        const keys = await mountKeys();
        if (
          conditionOf(rb, 'TrustBundleProjection')?.status === 'True' &&
          keys?.includes(PARAM_KEYS.trustBundleName) === true
        )
          return true;
        if (Date.now() - resyncedAt > 2_000) {
          resyncedAt = Date.now();
          fleet.direct.resync(ID);
        }
        return undefined;
      },
      60_000,
      'condition TrustBundleProjection True and the parameters mounting the bundle',
    );
    // The pass forced last may still run; nothing forces one after it.
    await new Promise((r) => setTimeout(r, 3_000));
    assert.ok((await mountKeys())?.includes(PARAM_KEYS.trustBundleName));
  });

  test('a node with kubelet 1.34 appears: within seconds the parameters lose the mount and the status says KubeletTooOld', async (t) => {
    const accepted = (): Promise<number> =>
      fleet.metric('rtb_drift_listener_events_accepted_total', { kind: 'ConfigMap' });
    const acceptedBefore = await accepted();
    const t0 = performance.now();
    await putLegacyNode(rt().kubeConfig(), 'v1.34.4');
    const rb = await eventually(
      async () => {
        const r = await fleet.readRb(ID);
        const unmounted = (await mountKeys())?.length === 0;
        return conditionOf(r, 'TrustBundleProjection')?.reason === 'KubeletTooOld' && unmounted
          ? r
          : undefined;
      },
      PUSH_BOUND_MS,
      'KubeletTooOld and parameters without the mount',
    );
    t.diagnostic(`node to parameters without the mount: ${(performance.now() - t0).toFixed(0)} ms`);
    const c = conditionOf(rb, 'TrustBundleProjection');
    assert.equal(c?.status, 'False');
    assert.match(c.message, /pool legacy \(v1\.34\.4, 1 node\)/);
    assert.equal(rb.status?.state, 'Ready', 'the runtime is served otherwise');
    assert.match((await reported())?.kubelets ?? '', /pool legacy \(v1\.34\.4, 1 node\)/);
    assert.ok((await accepted()) > acceptedBefore, "the webhook's event reached the listener");
  });
});
