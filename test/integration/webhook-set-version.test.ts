/**
 * The webhook's revision on a real API server: the set version its runtime's objects make up
 * (src/webhook/set-revision.ts), as direct mode writes them, each with its content version. A
 * change of only the pull Secret, or only the bundle, is one write to the runtime: the revision
 * Pods are stamped with and the report the KCP reads follow it, the ConfigMap untouched.
 */
import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubernetesObject,
  type V1Pod,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { CONTENT_VERSION_ANNOTATION, setVersionOf } from '../../src/api/set-version.js';
import { readReport, WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import {
  ORIGINAL_IMAGES_ANNOTATION,
  REVISION_ANNOTATION,
  REVISION_LABEL,
} from '../../src/api/workload-health.js';
import { renderWebhookManifests } from '../../src/render/webhook-manifests.js';
import { CONFIG_MAP_KEY, CONFIG_MAP_NAME } from '../../src/api/webhook-features.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { applyObjects } from '../../src/kube/apply.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { useControlPlane } from '../support/control-plane.js';
import { seedConfigText } from '../support/fixtures.js';
import { CTB_NAME, CTB_SIGNER } from '../support/kcp.js';
import { trustBundleObject } from '../support/trust-bundles.js';
import { registerWebhook, startTestWebhook, type TestWebhook } from '../support/webhook.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const PULL_SECRET = 'registry-credentials'; // the seed config's
let cluster: LocalCluster;
let core: CoreV1Api;
let webhook: TestWebhook | undefined;
let bundlePem: string;

const annotated = (version: string): Record<string, string> => ({ [CONTENT_VERSION_ANNOTATION]: version });

const pullSecret = (version: string): KubernetesObject =>
  ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: PULL_SECRET, namespace: RUNTIME_NAMESPACE, annotations: annotated(version) },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(`{"auths":{"${version}.example":{}}}`).toString('base64') },
  }) as KubernetesObject;

async function bundle(version: string): Promise<KubernetesObject> {
  const obj = await trustBundleObject(cluster.kubeConfig(), CTB_NAME, {
    signerName: CTB_SIGNER,
    trustBundle: bundlePem,
  });
  return { ...obj, metadata: { ...obj.metadata, annotations: annotated(version) } };
}

const configMap = (version: string): KubernetesObject =>
  ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: CONFIG_MAP_NAME, namespace: RUNTIME_NAMESPACE, annotations: annotated(version) },
    data: { [CONFIG_MAP_KEY]: seedConfigText() },
  }) as KubernetesObject;

const write = (objects: KubernetesObject[]) =>
  applyObjects(cluster.kubeConfig(), objects, { fieldManager: 'test-kcp' });

const configMapVersion = async (): Promise<string | undefined> =>
  (await core.readNamespacedConfigMap({ name: CONFIG_MAP_NAME, namespace: RUNTIME_NAMESPACE })).metadata
    ?.resourceVersion;

/** Waits until the holder's revision and the report's loadedVersion are both `version`. */
async function follows(version: string, what: string): Promise<void> {
  await eventually(
    async () => {
      if (webhook?.app.config.revision !== version) return undefined;
      const report = readReport(
        await core
          .readNamespacedConfigMap({ name: WEBHOOK_STATUS_CONFIG_MAP, namespace: RUNTIME_NAMESPACE })
          .catch(() => undefined),
      );
      return report.loadedVersion === version ? true : undefined;
    },
    15_000,
    what,
  );
}

describe('the webhook computes the set version from the objects on its runtime', () => {
  before(async () => {
    cluster = plane().cluster('runtime');
    core = cluster.kubeConfig().makeApiClient(CoreV1Api);
    bundlePem = (await createCertificateAuthority({ commonName: 'landscape CA' })).certPem;
    await core.createNamespace({ body: { metadata: { name: RUNTIME_NAMESPACE } } });
    // As direct mode writes a set: bundle, then pull Secret, then config.
    await write([await bundle('b1'), pullSecret('s1'), configMap('c1')]);
    webhook = await startTestWebhook(cluster, {
      statusConfigMap: { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP },
      trustCapability: false,
      removeUpstreamLeftovers: false,
    });
  });

  after(async () => {
    await webhook?.stop();
  });

  test('the set written whole: the revision and the report are its set version', async () => {
    await follows(setVersionOf(['s1', 'b1', 'c1']), 'the set version of the set written');
  });

  test('only the pull Secret rewritten: the revision and the report follow, the ConfigMap untouched', async () => {
    const before = await configMapVersion();
    await write([pullSecret('s2')]);
    await follows(setVersionOf(['s2', 'b1', 'c1']), 'the set version with the new Secret');
    assert.equal(await configMapVersion(), before, 'the ConfigMap was not written');
  });

  test('only the bundle rewritten: the revision and the report follow', async () => {
    const before = await configMapVersion();
    await write([await bundle('b2')]);
    await follows(setVersionOf(['s2', 'b2', 'c1']), 'the set version with the new bundle');
    assert.equal(await configMapVersion(), before, 'the ConfigMap was not written');
  });
  test("a namespace user's Pod cannot carry a revision stamp our admission did not give", async () => {
    const revision = webhook?.app.config.revision;
    assert.ok(webhook && revision !== undefined);
    const FIPS = 'rt-cfg.kyma-project.io/set-fips-mode';
    const manifests = renderWebhookManifests({
      image: 'unused',
      url: webhook.url,
      caBundlePem: webhook.ca.certPem,
      failurePolicy: 'Fail',
    });
    await registerWebhook(cluster, manifests.mutatingWebhookConfiguration, {
      metadata: { name: 'probe', annotations: { [FIPS]: 'true' } },
      spec: { containers: [{ name: 'app', image: 'quay.io/app:1' }] },
    });
    const PRIVATE = 'docker.io/someone/private:1';
    const forged = (name: string, annotations: Record<string, string> = {}): V1Pod => ({
      metadata: {
        name,
        labels: { [REVISION_LABEL]: revision, app: 'x' },
        annotations: {
          ...annotations,
          [REVISION_ANNOTATION]: revision,
          [ORIGINAL_IMAGES_ANNOTATION]: JSON.stringify({ app: 'replace.me/app:1' }),
        },
      },
      spec: { containers: [{ name: 'app', image: PRIVATE }] },
    });
    // No feature applies: the webhook changes nothing but takes the stamp away.
    const plain = await core.createNamespacedPod({ namespace: 'default', body: forged('forged-plain') });
    assert.deepEqual(plain.metadata?.labels, { app: 'x' });
    const plainAnnotations: Record<string, string | undefined> = plain.metadata.annotations ?? {};
    assert.equal(plainAnnotations[REVISION_ANNOTATION], undefined);
    assert.equal(plainAnnotations[ORIGINAL_IMAGES_ANNOTATION], undefined);
    // A Pod we change carries our stamp: the revision, and no originals (no image was rewritten).
    const fips = await core.createNamespacedPod({
      namespace: 'default',
      body: forged('forged-fips', { [FIPS]: 'true' }),
    });
    assert.equal(fips.metadata?.labels?.[REVISION_LABEL], revision);
    const fipsAnnotations: Record<string, string | undefined> = fips.metadata.annotations ?? {};
    assert.equal(fipsAnnotations[ORIGINAL_IMAGES_ANNOTATION], undefined);
    assert.equal(fips.spec?.containers[0]?.image, PRIVATE);
    // Added later by an update: taken away again.
    const patched = await core.patchNamespacedPod(
      {
        namespace: 'default',
        name: 'forged-plain',
        body: { metadata: { labels: { [REVISION_LABEL]: revision } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.equal(patched.metadata?.labels?.[REVISION_LABEL], undefined);
  });
});
