import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { RUNTIME_NAMESPACE, WEBHOOK_SELECTOR } from '../api/runtime-names.js';
import type { LocalCluster } from '../envtest/control-plane.js';

/** When the last of a Deployment's Pods was created, had its container started and was Ready (epoch ms). */
export interface PodTimes {
  readonly createdAt: number | undefined;
  readonly startedAt: number | undefined;
  readonly readyAt: number | undefined;
}

const epoch = (t: Date | string | undefined): number | undefined =>
  t === undefined ? undefined : new Date(t).getTime();

const latest = (values: readonly (number | undefined)[]): number | undefined =>
  values.length === 0 || values.some((v) => v === undefined || Number.isNaN(v))
    ? undefined
    : Math.max(...(values as number[]));

/**
 * The slowest Pod's times from the Pods' status (the API server keeps them to the second): a
 * Deployment is available when its last Pod is Ready. Undefined where a Pod lacks one. Pure.
 */
export function lastPodTimes(pods: readonly V1Pod[]): PodTimes {
  return {
    createdAt: latest(pods.map((p) => epoch(p.metadata?.creationTimestamp))),
    startedAt: latest(pods.map((p) => epoch(p.status?.containerStatuses?.[0]?.state?.running?.startedAt))),
    readyAt: latest(
      pods.map((p) => {
        const ready = p.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True');
        return epoch(ready?.lastTransitionTime);
      }),
    ),
  };
}

/** The times of the webhook Deployments' Pods on these runtimes, the slowest Pod's of all. */
export async function readWebhookPodTimes(runtimes: readonly LocalCluster[]): Promise<PodTimes> {
  const labelSelector = Object.entries(WEBHOOK_SELECTOR)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const pods: V1Pod[] = [];
  for (const rt of runtimes) {
    const list = await rt
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .listNamespacedPod({ namespace: RUNTIME_NAMESPACE, labelSelector });
    pods.push(...list.items);
  }
  return lastPodTimes(pods);
}
