/** The webhook's Deployment on a runtime, as the tests read it. */
import { AppsV1Api, type KubeConfig, type V1Deployment } from '@kubernetes/client-node';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT } from '../../src/api/runtime-names.js';

/** Reads the runtime's webhook Deployment (WEBHOOK_DEPLOYMENT in kyma-system) with `kc`. */
export function readWebhookDeployment(kc: KubeConfig): Promise<V1Deployment> {
  return kc
    .makeApiClient(AppsV1Api)
    .readNamespacedDeployment({ name: WEBHOOK_DEPLOYMENT, namespace: RUNTIME_NAMESPACE });
}
