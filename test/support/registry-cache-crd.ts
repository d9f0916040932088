/**
 * The RegistryCacheConfig CRD as far as the runtime agent reads it: kyma-project/registry-cache's
 * `registrycacheconfigs.core.kyma-project.io` (v1beta1, namespaced, `spec.upstream`, the status
 * subresource with `state`), the rest of its schema left out (docs/registry-caches.md).
 */
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { REGISTRY_CACHE_API } from '../../src/api/registry-caches.js';
import { kubeRequest } from '../../src/kube/kube-request.js';

export function registryCacheCrd(): KubernetesObject {
  const { group, resource, kind } = REGISTRY_CACHE_API;
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${resource}.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { kind, plural: resource, singular: kind.toLowerCase(), listKind: `${kind}List` },
      versions: [
        {
          name: 'v1beta1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: {
                  type: 'object',
                  required: ['upstream'],
                  properties: { upstream: { type: 'string' }, remoteURL: { type: 'string' } },
                },
                status: {
                  type: 'object',
                  properties: { state: { type: 'string', enum: ['Pending', 'Ready', 'Failed'] } },
                },
              },
            },
          },
        },
      ],
    },
  };
  return crd;
}

const path = (namespace: string, name?: string): string =>
  `/apis/${REGISTRY_CACHE_API.group}/v1beta1/namespaces/${namespace}/${REGISTRY_CACHE_API.resource}${name ? `/${name}` : ''}`;

/** Creates a RegistryCacheConfig for `upstream`; with `state`, sets its status as KIM's controller would. */
export async function createRegistryCache(
  kc: KubeConfig,
  namespace: string,
  name: string,
  upstream: string,
  state?: 'Pending' | 'Ready' | 'Failed',
): Promise<void> {
  await kubeRequest(kc, {
    method: 'POST',
    path: path(namespace),
    body: {
      apiVersion: `${REGISTRY_CACHE_API.group}/v1beta1`,
      kind: REGISTRY_CACHE_API.kind,
      metadata: { name, namespace },
      spec: { upstream },
    },
    parseResponse: false,
  });
  if (state !== undefined)
    await kubeRequest(kc, {
      method: 'PATCH',
      path: `${path(namespace, name)}/status`,
      body: { status: { state } },
      parseResponse: false,
    });
}

/** Deletes a RegistryCacheConfig. */
export async function deleteRegistryCache(kc: KubeConfig, namespace: string, name: string): Promise<void> {
  await kubeRequest(kc, { method: 'DELETE', path: path(namespace, name), parseResponse: false });
}
