/**
 * What the API server of each pinned Kubernetes minor serves of ClusterTrustBundle
 * (docs/kubernetes-versions.md). Every minor in every run, whatever the matrix holds: this checks
 * the control plane itself, not the product on it.
 */
import {
  ApiException,
  CertificatesApi,
  CertificatesV1Api,
  CertificatesV1beta1Api,
  CoreV1Api,
  CustomObjectsApi,
  VersionApi,
  type V1APIResourceList,
  type V1Pod,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { apiserverModuleDir } from '../../src/envtest/binaries.js';
import { requiredVersion } from '../../src/envtest/go-binary.js';
import { KUBERNETES_VERSION_LIST, KUBERNETES_VERSIONS } from '../../src/envtest/kubernetes-versions.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { useControlPlane } from '../support/control-plane.js';

const bundleName = 'rt-test.example.com:ctb:1';
const podWithProjection = (name: string): V1Pod => ({
  metadata: { name },
  spec: {
    containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.10' }],
    volumes: [
      {
        name: 'certs',
        projected: { sources: [{ clusterTrustBundle: { name: bundleName, path: 'ca.pem' } }] },
      },
    ],
  },
});

/** The resources an API group version lists, or undefined when it is not served (404). */
async function resources(list: () => Promise<V1APIResourceList>): Promise<string[] | undefined> {
  try {
    return (await list()).resources.map((r) => r.name);
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return undefined;
    throw error;
  }
}

for (const kubernetes of KUBERNETES_VERSION_LIST) {
  const served = KUBERNETES_VERSIONS[kubernetes].clusterTrustBundleApi;
  describe(`the API server of Kubernetes ${kubernetes}`, () => {
    const plane = useControlPlane({ kubernetes, clusters: ['projection-on'] });
    const gateOff = useControlPlane({
      kubernetes,
      clusters: ['projection-off'],
      clusterTrustBundleProjection: false,
    });

    test('reports the pinned release on /version', async () => {
      const info = await plane().cluster('projection-on').kubeConfig().makeApiClient(VersionApi).getCode();
      const pinned = requiredVersion(
        readFileSync(join(apiserverModuleDir(kubernetes), 'go.mod'), 'utf8'),
        'k8s.io/kubernetes',
      );
      assert.equal(plane().kubernetes, kubernetes);
      assert.equal(info.gitVersion, pinned);
      assert.equal(`${info.major}.${info.minor}`, kubernetes);
    });

    test(`serves ClusterTrustBundle in ${served} only`, async () => {
      const kc = plane().cluster('projection-on').kubeConfig();
      const group = await kc.makeApiClient(CertificatesApi).getAPIGroup();
      const versions = group.versions.map((v) => v.version);
      const v1 = (await resources(() => kc.makeApiClient(CertificatesV1Api).getAPIResources())) ?? [];
      const v1beta1 = await resources(() => kc.makeApiClient(CertificatesV1beta1Api).getAPIResources());
      assert.ok(v1.includes('certificatesigningrequests'), 'CSRs stay in v1');
      assert.ok(!versions.includes('v1alpha1'));
      if (kubernetes === '1.34') {
        assert.deepEqual(versions, ['v1', 'v1beta1']);
        assert.ok(v1beta1?.includes('clustertrustbundles'));
        assert.ok(!v1.includes('clustertrustbundles'));
      } else {
        assert.deepEqual(versions, ['v1']);
        assert.equal(group.preferredVersion?.version, 'v1');
        assert.ok(v1.includes('clustertrustbundles'));
        assert.equal(v1beta1, undefined, 'certificates.k8s.io/v1beta1 is not served at all');
      }
    });

    test('stores a ClusterTrustBundle and keeps a projected clusterTrustBundle source', async () => {
      const kc = plane().cluster('projection-on').kubeConfig();
      const objects = kc.makeApiClient(CustomObjectsApi);
      const ca = await createCertificateAuthority({ commonName: 'bundle-test' });
      await objects.createClusterCustomObject({
        group: 'certificates.k8s.io',
        version: served,
        plural: 'clustertrustbundles',
        body: {
          apiVersion: `certificates.k8s.io/${served}`,
          kind: 'ClusterTrustBundle',
          metadata: { name: bundleName },
          spec: { signerName: 'rt-test.example.com/ctb', trustBundle: ca.certPem },
        },
      });
      const created = await kc
        .makeApiClient(CoreV1Api)
        .createNamespacedPod({ namespace: 'default', body: podWithProjection('kept') });
      const source = created.spec?.volumes?.[0]?.projected?.sources?.[0];
      assert.deepEqual(JSON.parse(JSON.stringify(source?.clusterTrustBundle)), {
        name: bundleName,
        path: 'ca.pem',
      });
    });

    test('with the projection gate off, drops the projected source as such a runtime does', async () => {
      const kc = gateOff().cluster('projection-off').kubeConfig();
      // The later --feature-gates merged into the minor's: ClusterTrustBundle itself stays served.
      const list =
        served === 'v1'
          ? () => kc.makeApiClient(CertificatesV1Api).getAPIResources()
          : () => kc.makeApiClient(CertificatesV1beta1Api).getAPIResources();
      assert.ok((await resources(list))?.includes('clustertrustbundles'));
      const core = kc.makeApiClient(CoreV1Api);
      const created = await core.createNamespacedPod({
        namespace: 'default',
        body: podWithProjection('dropped'),
      });
      const source = created.spec?.volumes?.[0]?.projected?.sources?.[0];
      assert.equal(source?.clusterTrustBundle, undefined);
    });
  });
}
