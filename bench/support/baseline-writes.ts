// The baselines' writes: what the controller writes for a source set, done by the benchmark.
import type { KubernetesObject } from '@kubernetes/client-node';
import { SET_VERSION_ANNOTATION } from '../../src/api/runtime-bootstrapper.js';
import { FIELD_MANAGER } from '../../src/api/runtime-names.js';
import { objectPath } from '../../src/kube/resource-path.js';
import { CTB_NAME, dockerConfig } from '../../test/support/kcp.js';
import { seedConfigText } from '../../test/support/fixtures.js';
import type { KeepAliveClient } from './keep-alive-client.js';

/**
 * What planSources applies (the namespace, then copies of the set under other names), labelled
 * `label`; the bundle at `ctbApiVersion`, the version the runtimes serve.
 */
export function baselineObjects(
  label: string | number,
  ctbSpec: unknown,
  ctbApiVersion: string,
): KubernetesObject[] {
  const annotations = { [SET_VERSION_ANNOTATION]: `baseline-${label}` };
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kyma-system' } },
    {
      apiVersion: ctbApiVersion,
      kind: 'ClusterTrustBundle',
      metadata: { name: CTB_NAME.replace(/:[^:]*$/, ':bench-baseline'), annotations },
      spec: ctbSpec,
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'bench-baseline', namespace: 'kyma-system', annotations },
      type: 'kubernetes.io/dockerconfigjson',
      data: dockerConfig(`baseline-${label}`),
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'bench-baseline', namespace: 'kyma-system', annotations },
      data: { 'rt-bootstrapper-config.json': seedConfigText() },
    } as KubernetesObject,
  ];
}

/**
 * Server-side apply as raw PATCHes over a keep-alive connection, under the controller's field
 * manager: a runtime's drift registration lets the controller's own writes pass without a call to
 * the webhook, and a floor that paid that call would measure the webhook, not the writes.
 */
export async function applyKeepAlive(
  client: KeepAliveClient,
  objects: readonly KubernetesObject[],
): Promise<void> {
  for (const o of objects) {
    await client.request(
      'PATCH',
      `${objectPath(o)}?fieldManager=${FIELD_MANAGER}&force=true`,
      o,
      'application/apply-patch+yaml',
    );
  }
}
