import { CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import type { Logger } from 'pino';
import { ControlPlane, type LocalCluster } from '../envtest/control-plane.js';
import { applyObjects } from '../kube/apply.js';
import { describeMutation } from './describe-mutation.js';
import { localWebhookConfigText, seedExamplePod } from './embedded-defaults.js';
import { runtimeSetVersion, startKcpLandscape, waitReady } from './kcp-landscape.js';
import { landscapeSourceObjects } from './landscape-sources.js';
import { installLocalWebhook, type LocalWebhook } from './local-webhook.js';

/** Options of the local landscape. */
export interface LandscapeOptions {
  readonly say: (line: string) => void;
  readonly logger: Logger;
  /** Runtime cluster names (default `runtime-1,runtime-2`). */
  readonly runtimes?: readonly string[];
}

/** A running local landscape. */
export interface Landscape {
  readonly plane: ControlPlane;
  stop(): Promise<void>;
}

/**
 * The local landscape on the embedded default: a KCP and runtimes (real API servers), the
 * controller in direct mode with a RuntimeBootstrapper per runtime, the webhook serving each
 * runtime; then it shows the seed example mutated on every runtime, rotates the KCP's sources
 * and shows the change arrive everywhere and take effect.
 */
export async function startLandscape(o: LandscapeOptions): Promise<Landscape> {
  const { say } = o;
  const started = Date.now();
  const names = o.runtimes ?? ['runtime-1', 'runtime-2'];
  const plane = await ControlPlane.start({
    clusters: ['kcp', ...names],
    log: (l) => {
      say(`· ${l}`);
    },
  });
  const webhooks: LocalWebhook[] = [];
  let kcp: Awaited<ReturnType<typeof startKcpLandscape>> | undefined;
  const stop = async (): Promise<void> => {
    for (const w of webhooks) await w.stop();
    await kcp?.stop();
    await plane.stop();
  };
  try {
    const b = plane.binaries;
    say(`kube-apiserver ${b.kubernetesVersion}, etcd ${b.etcdVersion} (${b.source})`);
    for (const c of plane.clusters)
      say(`cluster ${c.name.padEnd(10)} ${c.server}  kubeconfig: ${c.kubeconfigPath}`);
    const runtimes = names.map((n) => plane.cluster(n));
    kcp = await startKcpLandscape({
      kcp: plane.cluster('kcp'),
      runtimes,
      configText: localWebhookConfigText(),
      logger: o.logger,
    });
    say(`\ncontroller (direct mode) on kcp: one RuntimeBootstrapper per runtime`);
    // The webhook Deployments the controller installs cannot run without a kubelet, so each
    // runtime is served by a webhook in this process that reads the config the controller wrote.
    for (const rt of runtimes) webhooks.push(await installLocalWebhook(rt, { logger: o.logger }));
    await waitReady(kcp, names);
    for (const id of names) {
      const rb = await kcp.readBootstrapper(id);
      say(
        `  RuntimeBootstrapper ${id}: ${rb.status?.state ?? ''}, config version ${rb.status?.appliedVersion ?? ''}, webhook ${rb.status?.webhookVersion ?? ''}`,
      );
    }

    for (const rt of runtimes) await showSeedPod(rt, 'pause-test1', say, rt === runtimes[0]);

    say('\nrotating the KCP sources: a new registry mirror in the ConfigMap and new pull credentials…');
    const before = kcp.sources.snapshot().version;
    const digests = webhooks.map((w) => w.app.config.digest);
    const rotated = localWebhookConfigText().replace('"ghcr.io"', '"mirror.landscape.local/ghcr"');
    await applyObjects(
      plane.cluster('kcp').kubeConfig(),
      (
        await landscapeSourceObjects({
          configText: rotated,
          namespace: 'kcp-system',
          pullSecretName: 'registry-credentials',
          auth: 'rotated:credentials',
        })
      ).filter((x: KubernetesObject) => x.kind !== 'ClusterTrustBundle'),
    );
    const t0 = Date.now();
    let version = before;
    while (version === before) {
      await new Promise((r) => setTimeout(r, 20));
      version = kcp.sources.snapshot().version;
    }
    for (const rt of runtimes) {
      while ((await runtimeSetVersion(rt)) !== version) await new Promise((r) => setTimeout(r, 20));
      say(`  ${rt.name}: set ${version} applied ${Date.now() - t0} ms after the change`);
    }
    for (const [i, rt] of runtimes.entries()) {
      // The webhook on the runtime picks the new ConfigMap up through its watch.
      while (webhooks[i]?.app.config.digest === digests[i]) await new Promise((r) => setTimeout(r, 20));
      await showSeedPod(rt, 'pause-test2', say, false);
    }
    say(
      `\nready in ${((Date.now() - started) / 1000).toFixed(1)} s. Try: ${b.kubectl ?? 'kubectl'} --kubeconfig ${plane.cluster('kcp').kubeconfigPath} get runtimebootstrappers -n kcp-system`,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { plane, stop };
}

async function showSeedPod(
  rt: LocalCluster,
  name: string,
  say: (l: string) => void,
  full: boolean,
): Promise<void> {
  const sent = seedExamplePod(name);
  const stored = await rt
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespacedPod({ namespace: 'default', body: sent });
  if (full) {
    const shown = JSON.parse(JSON.stringify(stored)) as { metadata?: Record<string, unknown> };
    if (shown.metadata) delete shown.metadata.managedFields;
    say(`\nthe seed example's Pod as sent to ${rt.name}:\n${indent(stringify(sent))}`);
    say(`as stored by the API server after the webhook:\n${indent(stringify(shown))}`);
  }
  say(`what the webhook did to ${name} on ${rt.name}:`);
  for (const line of describeMutation(sent, stored)) say(`  ✓ ${line}`);
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}
