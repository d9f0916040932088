import type { KubernetesObject } from '@kubernetes/client-node';
import { parseWebhookConfig } from '../api/webhook-config.js';
import { CONFIG_MAP_KEY, CONFIG_MAP_NAME } from '../api/webhook-features.js';
import { createCertificateAuthority } from '../pki/certificate-authority.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { TRUST_BUNDLE_KIND } from '../kube/trust-bundle-api.js';
import { trustBundleApis } from '../kube/trust-bundle-discovery.js';
import { ControlPlaneError } from '../envtest/errors.js';

/**
 * The three source objects of a landscape (pull Secret, ClusterTrustBundle, webhook ConfigMap)
 * in `namespace`: on a KCP (`kcp-system`) for the controller to propagate, or directly on a
 * lone runtime (`kyma-system`). Without `dockerConfigJson` the pull credentials are placeholders
 * (for a landscape whose Pods never run). The bundle is written at `trustBundleApiVersion`, the
 * version the cluster serves ({@link trustBundleApiVersionOf}).
 */
export async function landscapeSourceObjects(o: {
  configText: string;
  namespace: string;
  trustBundleApiVersion: string;
  pullSecretName?: string;
  /** The pull Secret's `.dockerconfigjson` (default: placeholder credentials for ghcr.io). */
  dockerConfigJson?: string;
}): Promise<KubernetesObject[]> {
  const config = parseWebhookConfig(o.configText);
  const objects: KubernetesObject[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: o.namespace } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: o.pullSecretName ?? config.imagePullSecret.name, namespace: o.namespace },
      type: 'kubernetes.io/dockerconfigjson',
      data: {
        '.dockerconfigjson': Buffer.from(
          o.dockerConfigJson ?? placeholderDockerConfig('local:landscape'),
        ).toString('base64'),
      },
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: CONFIG_MAP_NAME, namespace: o.namespace },
      data: { [CONFIG_MAP_KEY]: o.configText },
    } as KubernetesObject,
  ];
  if (config.clusterTrustBundle) {
    const bundleCa = await createCertificateAuthority({ commonName: 'landscape CA' });
    // A signer-linked bundle's name is `<signer with / as :>:<suffix>`; derive the signer back.
    const parts = config.clusterTrustBundle.name.split(':');
    const signerName = parts.length >= 3 ? `${parts[0] ?? ''}/${parts[1] ?? ''}` : undefined;
    objects.splice(1, 0, {
      apiVersion: o.trustBundleApiVersion,
      kind: TRUST_BUNDLE_KIND,
      metadata: { name: config.clusterTrustBundle.name },
      spec: { signerName, trustBundle: bundleCa.certPem },
    } as KubernetesObject);
  }
  return objects;
}

/** A `.dockerconfigjson` with placeholder credentials (`user:password`) for ghcr.io. */
export function placeholderDockerConfig(userPassword: string): string {
  return JSON.stringify({ auths: { 'ghcr.io': { auth: Buffer.from(userPassword).toString('base64') } } });
}

/** The ClusterTrustBundle apiVersion the cluster serves; a cluster that serves none is refused. */
export async function trustBundleApiVersionOf(kc: ClusterAccess): Promise<string> {
  const api = await trustBundleApis.get(kc);
  if (!api.served) throw new ControlPlaneError(`the cluster serves no ClusterTrustBundle API: ${api.found}`);
  return api.apiVersion;
}
