// test-matrix: kubernetes
/**
 * Runtimes that cannot take the trust-bundle mount, on real API servers (docs/trust-bundle-api.md):
 * one whose API server drops projected clusterTrustBundle sources (the ClusterTrustBundleProjection
 * gate off) and one that serves no ClusterTrustBundle API, beside one that takes it. Direct mode
 * installs on all three from one KCP; the webhook on each (in this process, registered by URL)
 * mounts the bundle only where it is kept, says why in the response's warnings where not, counts
 * it, and reports its finding, which the KCP puts on the RuntimeBootstrapper.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { CTB_HASH_ANNOTATION } from '../../src/api/trust-stamp.js';
import { readReport, WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { runStatus } from '../../src/cli/commands/status-action.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { renderWebhookManifests } from '../../src/render/webhook-manifests.js';
import { useControlPlane } from '../support/control-plane.js';
import { DirectFleet, conditionOf as condition } from '../support/direct-fleet.js';
import { CTB_NAME, markDeploymentAvailable } from '../support/kcp.js';
import { listTrustBundles } from '../support/trust-bundles.js';
import {
  assertNoTrustMount,
  createPodWithWarnings,
  seedPodNamed,
  trustBundleSkipped,
} from '../support/trust-mount.js';
import { registerWebhook, startTestWebhook, type TestWebhook } from '../support/webhook.js';

// Three planes: flags are per plane. The KCP and the runtime that takes the mount share one.
const kept = useControlPlane({ clusters: ['kcp', 'rt-kept'] });
const dropped = useControlPlane({
  clusters: ['rt-dropped'],
  apiserverArgs: ['--feature-gates=ClusterTrustBundleProjection=false'],
});
const unserved = useControlPlane({
  clusters: ['rt-none'],
  // Whichever version the minor serves, off (1.34: v1beta1, 1.37: v1).
  apiserverArgs: [
    '--runtime-config=certificates.k8s.io/v1beta1/clustertrustbundles=false,certificates.k8s.io/v1/clustertrustbundles=false',
  ],
});

const kcp = (): LocalCluster => kept().cluster('kcp');
const runtimes = (): Record<string, LocalCluster> => ({
  'rt-kept': kept().cluster('rt-kept'),
  'rt-dropped': dropped().cluster('rt-dropped'),
  'rt-none': unserved().cluster('rt-none'),
});
const rt = (id: string): LocalCluster => {
  const r = runtimes()[id];
  if (!r) throw new Error(`no runtime ${id}`);
  return r;
};
const fleet = new DirectFleet(kcp);

const hooks = new Map<string, TestWebhook>();

describe('runtimes that cannot take the trust-bundle mount', () => {
  before(async () => {
    await fleet.prepare(runtimes());
    await fleet.start({ runtimeTimeoutMs: 3_000 });
    for (const id of Object.keys(runtimes())) await fleet.create(id);
    for (const id of Object.keys(runtimes())) {
      // The set is there once the webhook's Deployment is: the webhook then has its config.
      await fleet.waitState(id, 'Installing');
      const hook = await startTestWebhook(rt(id), {
        statusConfigMap: { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP },
      });
      hooks.set(id, hook);
      fleet.onStop(() => hook.stop());
      const manifests = renderWebhookManifests({ image: 'x', url: hook.url, caBundlePem: hook.ca.certPem });
      await registerWebhook(rt(id), {
        ...manifests.mutatingWebhookConfiguration,
        metadata: { name: 'test-capability-webhook' },
      });
      await markDeploymentAvailable(rt(id));
    }
  });
  after(() => fleet.stop());

  test('where the projection is kept: the mount, no warning, the API version in the status', async () => {
    const { pod, warnings } = await createPodWithWarnings(rt('rt-kept').kubeConfig(), seedPodNamed('kept'));
    assert.ok(pod.spec?.volumes?.some((v) => v.name === 'rt-bootstrapper-certs'));
    assert.ok(pod.metadata?.annotations?.[CTB_HASH_ANNOTATION]);
    assert.deepEqual(
      warnings.filter((w) => w.includes('trust bundle not mounted')),
      [],
    );
    const rb = await fleet.waitCondition('rt-kept', 'TrustBundleProjection', { reason: 'Kept' }, 60_000);
    assert.match(rb.status?.clusterTrustBundleAPI ?? '', /^certificates\.k8s\.io\/v1(beta1)?$/);
    assert.equal(condition(rb, 'TrustBundleAPI')?.reason, 'Served');
  });

  test('where the API server drops the projection: no volume, no mount, no stamp; a warning, a count, a condition', async () => {
    const hook = hooks.get('rt-dropped');
    assert.ok(hook);
    const { pod, warnings } = await createPodWithWarnings(
      rt('rt-dropped').kubeConfig(),
      seedPodNamed('dropped'),
    );
    assertNoTrustMount(pod);
    // The rest of the mutation still applies.
    assert.equal(pod.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/modified'], 'true');
    assert.ok(pod.spec?.containers[0]?.env?.some((e) => e.name === 'KYMA_FIPS_MODE_ENABLED'));
    assert.ok(
      warnings.some((w) => /trust bundle not mounted.*ClusterTrustBundleProjection off/.test(w)),
      warnings.join(' | '),
    );
    assert.equal(await trustBundleSkipped(hook, 'projection_dropped'), 1);

    const report = await eventually(
      async () => {
        const cm = await kubeRequest<{ data?: Record<string, string> }>(rt('rt-dropped').kubeConfig(), {
          method: 'GET',
          path: `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/${WEBHOOK_STATUS_CONFIG_MAP}`,
        }).catch(() => undefined);
        return readReport(cm).trustBundle;
      },
      30_000,
      'the finding in the status ConfigMap',
    );
    assert.equal(report.projection, 'dropped');

    const rb = await fleet.waitCondition(
      'rt-dropped',
      'TrustBundleProjection',
      { reason: 'Dropped' },
      60_000,
    );
    assert.equal(condition(rb, 'TrustBundleProjection')?.status, 'False');
    assert.equal(rb.status?.state, 'Ready', 'the runtime is served otherwise');
    // The bundle itself is still written: the API serves it, only the projection is dropped.
    assert.equal((await listTrustBundles(rt('rt-dropped').kubeConfig())).length, 1);
  });

  test('where no ClusterTrustBundle API is served: the rest of the set, NotServed, and no mount', async () => {
    const rb = await fleet.waitFor(
      'rt-none',
      (r) =>
        condition(r, 'TrustBundleAPI')?.reason === 'NotServed' &&
        condition(r, 'TrustBundleProjection')?.reason === 'NotServed',
      60_000,
      'TrustBundleAPI and TrustBundleProjection NotServed',
    );
    assert.equal(condition(rb, 'TrustBundleAPI')?.status, 'False');
    assert.match(condition(rb, 'TrustBundleAPI')?.message ?? '', /is not served/);
    assert.equal(rb.status?.clusterTrustBundleAPI, undefined);
    assert.equal(rb.status?.state, 'Ready');
    assert.equal(condition(rb, 'ConfigurationSynced')?.status, 'True', 'the pull Secret and the config went');
    const cm = await kubeRequest<{ metadata?: { name?: string } }>(rt('rt-none').kubeConfig(), {
      method: 'GET',
      path: `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/rt-bootstrapper-config`,
    });
    assert.equal(cm.metadata?.name, 'rt-bootstrapper-config');

    const hook = hooks.get('rt-none');
    assert.ok(hook);
    const { pod, warnings } = await createPodWithWarnings(rt('rt-none').kubeConfig(), seedPodNamed('none'));
    assert.equal(
      pod.spec?.volumes?.find((v) => v.name === 'rt-bootstrapper-certs'),
      undefined,
    );
    assert.ok(
      warnings.some((w) => /trust bundle not mounted.*serves no ClusterTrustBundle API/.test(w)),
      warnings.join(' | '),
    );
    assert.equal(await trustBundleSkipped(hook, 'api_not_served'), 1);
  });

  test('rtb status shows each runtime’s API version and the runtimes without the mount', async () => {
    const text = await runStatus(
      { namespace: 'kcp-system', rolloutPolicy: 'default', output: 'text' },
      kcp().kubeConfig(),
    );
    assert.match(text, /ClusterTrustBundle API: .*none 1/);
    assert.match(text, /No trust-bundle mount:\n {2}rt-dropped {2}Dropped .*\n {2}rt-none {2}NotServed/);
    // The KCP's own bundle was read at the KCP's version and is unchanged.
    assert.equal(fleet.sources.snapshot().clusterTrustBundle?.metadata?.name, CTB_NAME);
  });
});
