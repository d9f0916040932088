import { CoreV1Api } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { Logger } from 'pino';
import { ControlPlane } from '../envtest/control-plane.js';
import { describeMutation } from './describe-mutation.js';
import { localWebhookConfigText, seedExamplePod } from './embedded-defaults.js';
import { installLocalWebhook, type LocalWebhook } from './local-webhook.js';

/** Options of the local landscape. */
export interface LandscapeOptions {
  readonly say: (line: string) => void;
  readonly logger: Logger;
  /** Runtime cluster names (default one: `runtime`). */
  readonly runtimes?: readonly string[];
}

/** A running local landscape. */
export interface Landscape {
  readonly plane: ControlPlane;
  stop(): Promise<void>;
}

/**
 * The local landscape on the embedded default: real runtime clusters, the webhook serving each,
 * and the seed example's Pod created on each and printed as stored.
 */
export async function startLandscape(o: LandscapeOptions): Promise<Landscape> {
  const { say } = o;
  const started = Date.now();
  const plane = await ControlPlane.start({
    clusters: o.runtimes ?? ['runtime'],
    log: (l) => {
      say(`· ${l}`);
    },
  });
  const webhooks: LocalWebhook[] = [];
  const stop = async (): Promise<void> => {
    for (const w of webhooks) await w.stop();
    await plane.stop();
  };
  try {
    const b = plane.binaries;
    say(`kube-apiserver ${b.kubernetesVersion}, etcd ${b.etcdVersion} (${b.source})`);
    for (const cluster of plane.clusters) {
      say(`cluster ${cluster.name}: ${cluster.server}\n  kubeconfig: ${cluster.kubeconfigPath}`);
      const webhook = await installLocalWebhook(cluster, {
        configText: localWebhookConfigText(),
        logger: o.logger,
      });
      webhooks.push(webhook);
      say(`  webhook: ${webhook.url} (registered, called by the API server)`);

      const sent = seedExamplePod();
      const stored = await cluster
        .kubeConfig()
        .makeApiClient(CoreV1Api)
        .createNamespacedPod({ namespace: 'default', body: sent });
      const shown = JSON.parse(JSON.stringify(stored)) as { metadata?: Record<string, unknown> };
      if (shown.metadata) delete shown.metadata.managedFields;
      say(`\nthe seed example's Pod as sent (${cluster.name}):\n${indent(stringify(sent))}`);
      say(`as stored by the API server after the webhook:\n${indent(stringify(shown))}`);
      say('what the webhook did:');
      for (const line of describeMutation(sent, stored)) say(`  ✓ ${line}`);
    }
    say(
      `\nready in ${((Date.now() - started) / 1000).toFixed(1)} s. Try: ${b.kubectl ?? 'kubectl'} --kubeconfig ${plane.clusters[0]?.kubeconfigPath ?? ''} get pod pause-test1 -o yaml`,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { plane, stop };
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}
