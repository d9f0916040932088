/**
 * The RegistryCacheConfig CRD as far as the runtime agent reads it: kyma-project/registry-cache's
 * `registrycacheconfigs.core.kyma-project.io` (v1beta1, namespaced, `spec.upstream`, the status
 * subresource with `state`), the rest of its schema left out (docs/registry-caches.md); and the
 * agent's report of the caches as a runtime's status ConfigMap holds it.
 */
import type { KubeConfig, KubernetesObject, V1ConfigMap } from '@kubernetes/client-node';
import {
  readRegistryCaches,
  REGISTRY_CACHE_API,
  REGISTRY_CACHES_KEY,
  type RegistryCachesReport,
} from '../../src/api/registry-caches.js';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { eventually } from '../../src/envtest/eventually.js';
import { kubeRequest } from '../../src/kube/kube-request.js';

/** The states upstream's CRD allows (`+kubebuilder:validation:Enum`); only `Ready` counts. */
export type RegistryCacheState = 'Pending' | 'Ready' | 'Terminating' | 'Failed';
const STATES: readonly RegistryCacheState[] = ['Pending', 'Ready', 'Terminating', 'Failed'];

/** The webhook's status ConfigMap on a runtime, where the agent's leader writes the report. */
export const STATUS_CONFIG_MAP = { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP } as const;

/** The CRD (see the file comment), `status.state` with upstream's enum. */
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
                  properties: { state: { type: 'string', enum: [...STATES] } },
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
  state?: RegistryCacheState,
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

/**
 * Waits until the registry-cache report in the status ConfigMap of the runtime that `kc` reaches
 * is as `ok` wants it; resolves it.
 */
export function registryCachesReported(
  kc: KubeConfig,
  ok: (r: RegistryCachesReport) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<RegistryCachesReport> {
  const { namespace, name } = STATUS_CONFIG_MAP;
  return eventually(
    async () => {
      const cm = await kubeRequest<V1ConfigMap>(kc, {
        method: 'GET',
        path: `/api/v1/namespaces/${namespace}/configmaps/${name}`,
      }).catch(() => undefined);
      const r = readRegistryCaches(cm?.data?.[REGISTRY_CACHES_KEY]);
      return r !== undefined && ok(r) ? r : undefined;
    },
    timeoutMs,
    what,
  );
}
