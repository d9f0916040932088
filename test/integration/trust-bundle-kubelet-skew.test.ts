/**
 * Kubelets older than the API server (docs/trust-bundle-api.md, "Kubelet skew"), on a real 1.37
 * API server serving ClusterTrustBundle at v1 only: a node reporting kubelet 1.34 (created through
 * the API, no kubelet behind it: only its status is read) can read the bundle at v1beta1 only, so
 * the webhook mounts nothing, warns, counts it and reports the pool, which the KCP puts on the
 * RuntimeBootstrapper and `rtb status` lists. The node upgraded to 1.37 gets the mount back. The
 * node's side (a 1.34 kubelet really failing the mount) is the e2e files' on the real node.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { CTB_HASH_ANNOTATION } from '../../src/api/trust-stamp.js';
import { readReport, WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { runStatus } from '../../src/cli/commands/status-action.js';
import { eventually } from '../../src/envtest/eventually.js';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { renderWebhookManifests } from '../../src/render/webhook-manifests.js';
import { useControlPlane } from '../support/control-plane.js';
import { putLegacyNode } from '../support/legacy-node.js';
import { DirectFleet, conditionOf as condition } from '../support/direct-fleet.js';
import { markDeploymentAvailable } from '../support/kcp.js';
import {
  assertNoTrustMount,
  createPodWithWarnings,
  seedPodNamed,
  trustBundleSkipped,
} from '../support/trust-mount.js';
import { registerWebhook, startTestWebhook, type TestWebhook } from '../support/webhook.js';

// 1.37 whatever the matrix runs: its flags serve ClusterTrustBundle at v1 and turn v1beta1 off.
const plane = useControlPlane({ kubernetes: '1.37', clusters: ['kcp', 'rt-skew'] });
const runtime = () => plane().cluster('rt-skew');
const fleet = new DirectFleet(() => plane().cluster('kcp'));

/** The webhook's finding as its status ConfigMap holds it. */
async function reported(kc: ClusterAccess) {
  const cm = await kubeRequest<{ data?: Record<string, string> }>(kc, {
    method: 'GET',
    path: `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/${WEBHOOK_STATUS_CONFIG_MAP}`,
  }).catch(() => undefined);
  return readReport(cm).trustBundle;
}

let hook: TestWebhook;

describe('a 1.37 runtime serving ClusterTrustBundle at v1 only, with a node whose kubelet is 1.34', () => {
  before(async () => {
    const kc = runtime().kubeConfig();
    await putLegacyNode(kc, 'v1.34.4');
    await fleet.prepare({ 'rt-skew': runtime() });
    await fleet.start({ runtimeTimeoutMs: 3_000 });
    await fleet.create('rt-skew');
    await fleet.waitState('rt-skew', 'Installing');
    hook = await startTestWebhook(runtime(), {
      statusConfigMap: { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP },
    });
    fleet.onStop(() => hook.stop());
    const manifests = renderWebhookManifests({ image: 'x', url: hook.url, caBundlePem: hook.ca.certPem });
    await registerWebhook(runtime(), {
      ...manifests.mutatingWebhookConfiguration,
      metadata: { name: 'test-kubelet-skew-webhook' },
    });
    await markDeploymentAvailable(runtime());
  });
  after(() => fleet.stop());

  test('no mount, a warning naming the pool and its kubelet, a count; the report and the status say why', async () => {
    const kc = runtime().kubeConfig();
    const { pod, warnings } = await createPodWithWarnings(kc, seedPodNamed('on-old-nodes'));
    assertNoTrustMount(pod);
    assert.equal(pod.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/modified'], 'true');
    assert.ok(
      warnings.some((w) =>
        /trust bundle not mounted: kubelets that cannot read .*certificates\.k8s\.io\/v1\).*pool legacy \(v1\.34\.4, 1 node\)/.test(
          w,
        ),
      ),
      warnings.join(' | '),
    );
    assert.equal(await trustBundleSkipped(hook, 'kubelet_too_old'), 1);

    const finding = await eventually(
      async () => {
        const found = await reported(kc);
        return found?.kubelets !== undefined ? found : undefined;
      },
      30_000,
      'the kubelets in the status ConfigMap',
    );
    assert.equal(finding.api, 'certificates.k8s.io/v1');
    assert.equal(
      finding.projection,
      'kept',
      'the API server keeps the source: only the kubelet cannot fill it',
    );
    assert.match(finding.kubelets ?? '', /pool legacy \(v1\.34\.4, 1 node\)/);

    const rb = await fleet.waitCondition(
      'rt-skew',
      'TrustBundleProjection',
      { reason: 'KubeletTooOld' },
      60_000,
    );
    const c = condition(rb, 'TrustBundleProjection');
    assert.equal(c?.status, 'False');
    assert.match(c.message, /pool legacy \(v1\.34\.4, 1 node\)/);
    assert.equal(rb.status?.state, 'Ready', 'the runtime is served otherwise');
    const text = await runStatus(
      { namespace: 'kcp-system', rolloutPolicy: 'default', output: 'text' },
      plane().cluster('kcp').kubeConfig(),
    );
    assert.match(text, /No trust-bundle mount:\n {2}rt-skew {2}KubeletTooOld .*pool legacy/);
  });

  test('the node upgraded to kubelet 1.37: the mount again', async () => {
    const kc = runtime().kubeConfig();
    await putLegacyNode(kc, 'v1.37.2');
    await eventually(
      async () => ((await reported(kc))?.kubelets === undefined ? true : undefined),
      30_000,
      'the kubelets gone from the status ConfigMap',
    );
    const { pod, warnings } = await createPodWithWarnings(kc, seedPodNamed('on-new-nodes'));
    assert.ok(pod.spec?.volumes?.some((v) => v.name === 'rt-bootstrapper-certs'));
    assert.ok(pod.metadata?.annotations?.[CTB_HASH_ANNOTATION]);
    assert.deepEqual(
      warnings.filter((w) => w.includes('trust bundle not mounted')),
      [],
    );
    assert.equal(await trustBundleSkipped(hook, 'kubelet_too_old'), 1, 'counted once, for the first Pod');
  });
});
