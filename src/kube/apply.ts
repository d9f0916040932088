import type { KubernetesObject } from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../api/runtime-names.js';
import type { ClusterAccess } from './cluster-access.js';
import { KubeApiError } from './kube-errors.js';
import { kubeRequest } from './kube-request.js';
import { describeObject, objectPath } from './resource-path.js';

/** Options of {@link applyObjects}. */
export interface ApplyOptions {
  readonly fieldManager?: string;
  /** Bound of each request (default kubeRequest's). */
  readonly timeoutMs?: number;
  /** Parse the stored objects the API server answers with, and resolve with them. */
  readonly answers?: boolean;
}

/**
 * Server-side applies objects in order under our field manager (force: we own these fields), one
 * raw PATCH each on the object's own path (./resource-path.ts: no discovery). Stops at the first
 * failure, so an order such as "backend before registration" holds. The stored objects the API
 * server answers with are parsed only with `answers` (resolved in order; undefined otherwise).
 * A failed call is a KubeApiError naming the object, with the call's status (`KubeApiError.wrap`).
 */
export async function applyObjects(
  access: ClusterAccess,
  objects: readonly KubernetesObject[],
  o: ApplyOptions = {},
): Promise<(KubernetesObject | undefined)[]> {
  const stored: (KubernetesObject | undefined)[] = [];
  for (const object of objects) {
    const path = objectPath(object);
    try {
      const answer = await kubeRequest<KubernetesObject | undefined>(access, {
        method: 'PATCH',
        path,
        query: { fieldManager: o.fieldManager ?? FIELD_MANAGER, force: true },
        body: object,
        // JSON is YAML: the API server takes the object as an apply configuration.
        contentType: 'application/apply-patch+yaml',
        parseResponse: o.answers === true,
        timeoutMs: o.timeoutMs,
      });
      stored.push(answer);
    } catch (cause) {
      throw KubeApiError.wrap(`cannot apply ${describeObject(object)}`, cause);
    }
  }
  return stored;
}

/**
 * Server-side applies `data` keys of one ConfigMap under `fieldManager`: each writer of a shared
 * ConfigMap (the webhook's status report) owns only its own keys, and leaves the others' alone.
 */
export async function applyConfigMapData(
  access: ClusterAccess,
  target: { readonly name: string; readonly namespace: string },
  data: Readonly<Record<string, string | undefined>>,
  o: ApplyOptions & { readonly fieldManager: string },
): Promise<void> {
  // A key whose value is undefined is left out (JSON), so the writer lets go of it.
  const configMap: KubernetesObject & { data: Readonly<Record<string, string | undefined>> } = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: target.name, namespace: target.namespace },
    data,
  };
  await applyObjects(access, [configMap], { timeoutMs: 10_000, ...o });
}
