import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { ANNOTATION_MODIFIED } from '../api/webhook-features.js';
import type { LocalCluster } from '../envtest/control-plane.js';
import { eventually } from '../envtest/eventually.js';
import { describeMutation } from './describe-mutation.js';
import { seedExamplePod } from './embedded-defaults.js';

const NAMESPACE = 'default';

/**
 * Waits until the runtime's API server calls the webhook and its answer passes `serves` (the
 * image rewritten to the expected registry), with dry-run creates of the seed Pod: with
 * `failurePolicy: Ignore` a Pod created before that would be stored unmutated.
 */
export function waitWebhookServes(
  rt: LocalCluster,
  serves: (pod: V1Pod) => boolean,
  what: string,
  timeoutMs = 120_000,
): Promise<V1Pod> {
  const core = rt.kubeConfig().makeApiClient(CoreV1Api);
  return eventually(
    async () => {
      const probe = await core.createNamespacedPod({
        namespace: NAMESPACE,
        dryRun: 'All',
        body: seedExamplePod('rtb-probe'),
      });
      return probe.metadata?.annotations?.[ANNOTATION_MODIFIED] === 'true' && serves(probe)
        ? probe
        : undefined;
    },
    timeoutMs,
    `the webhook of ${rt.name} to ${what}`,
    200,
  );
}

/** The first container's image of a Pod. */
export const firstImage = (pod: V1Pod): string => pod.spec?.containers[0]?.image ?? '';

/**
 * Creates the seed example's Pod on a runtime and says what the webhook did to it (with `full`,
 * the Pod as sent and as stored too); returns the stored Pod.
 */
export async function createSeedPod(
  rt: LocalCluster,
  name: string,
  say: (l: string) => void,
  full: boolean,
): Promise<V1Pod> {
  const sent = seedExamplePod(name);
  const stored = await rt
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespacedPod({ namespace: NAMESPACE, body: sent });
  if (full) {
    const shown = JSON.parse(JSON.stringify(stored)) as { metadata?: Record<string, unknown> };
    if (shown.metadata) delete shown.metadata.managedFields;
    say(`\nthe seed example's Pod as sent to ${rt.name}:\n${indent(stringify(sent))}`);
    say(`as stored by the API server after the webhook:\n${indent(stringify(shown))}`);
  }
  say(`what the webhook did to ${name} on ${rt.name}:`);
  for (const line of describeMutation(sent, stored)) say(`  ✓ ${line}`);
  return stored;
}

/** Waits until the Pod's containers run (the node pulled its image) and returns it. */
export function waitPodRunning(rt: LocalCluster, name: string, timeoutMs = 180_000): Promise<V1Pod> {
  const core = rt.kubeConfig().makeApiClient(CoreV1Api);
  return eventually(
    async () => {
      const pod = await core.readNamespacedPod({ name, namespace: NAMESPACE });
      const running = pod.status?.containerStatuses?.every((c) => c.state?.running !== undefined);
      return pod.status?.phase === 'Running' && running ? pod : undefined;
    },
    timeoutMs,
    `Pod ${NAMESPACE}/${name} on ${rt.name} to run`,
    250,
  );
}

/** The kubelet's `Pulled` event of the Pod: whence and how fast the image came. */
export async function pulledMessage(rt: LocalCluster, name: string): Promise<string | undefined> {
  const events = await rt
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .listNamespacedEvent({
      namespace: NAMESPACE,
      fieldSelector: `involvedObject.kind=Pod,involvedObject.name=${name}`,
    });
  return events.items.find((e) => e.reason === 'Pulled')?.message;
}

/** Indents a block of text by four spaces. */
export function indent(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}
