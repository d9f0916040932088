/**
 * Upstream's install as its release ships it (`kustomize build config/default`), shared by the
 * tests that upgrade over it: the text KIM applies, the objects, and Gardener cert-management's
 * CRDs that a landscape has (the test API server has none).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

/** The text of `test/fixtures/upstream/install.yaml` (what KIM's manifests held before our release). */
export function upstreamInstallText(): string {
  return readFileSync(new URL('../fixtures/upstream/install.yaml', import.meta.url), 'utf8');
}

/** The objects of {@link upstreamInstallText}. */
export function upstreamInstall(): KubernetesObject[] {
  return parseAllDocuments(upstreamInstallText())
    .map((d) => d.toJS() as KubernetesObject | null)
    .filter((o): o is KubernetesObject => o !== null);
}

/** The namespaces upstream's objects live in. */
export const UPSTREAM_NAMESPACES = ['kyma-system', 'istio-system'] as const;

/** Gardener cert-management's Issuer and Certificate, served without a schema. */
export function gardenerCertManagementCrds(): KubernetesObject[] {
  return [
    ['issuers', 'Issuer'],
    ['certificates', 'Certificate'],
  ].map(
    ([plural = '', kind = '']) =>
      ({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `${plural}.cert.gardener.cloud` },
        spec: {
          group: 'cert.gardener.cloud',
          scope: 'Namespaced',
          names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
          versions: [
            {
              name: 'v1alpha1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
            },
          ],
        },
      }) as KubernetesObject,
  );
}
