import type { V1Pod } from '@kubernetes/client-node';
import { join } from 'node:path';
import { parseWebhookConfig } from '../api/webhook-config.js';
import type { ControlPlane, LocalCluster } from '../envtest/control-plane.js';
import type { PauseImage } from '../envtest/pause-image.js';
import type { RtbImage } from '../envtest/rtb-image.js';
import { kubeRequest } from '../kube/kube-request.js';
import { trustBundleApis } from '../kube/trust-bundle-discovery.js';
import { inspectContainer } from './container-inspection.js';
import { ControlPlaneError } from '../envtest/errors.js';
import { startLandscapeRegistries } from './landscape-registries.js';
import type { PhaseClock } from './phase-timings.js';
import { pulledMessage, waitPodRunning } from './seed-pod.js';
import { configWithTarget, type WebhookHosting } from './webhook-hosting.js';
import { HOST_IP_REFERENCE } from '../render/webhook-options.js';

const FIPS_ENV = 'KYMA_FIPS_MODE_ENABLED';

/** The port of a local registry's `127.0.0.1:<port>`. */
const portOf = (host: string): number => Number(host.slice(host.lastIndexOf(':') + 1));

/**
 * The webhooks as Pods on a node per runtime, as in production: the controller's Deployments run
 * the rtb image from the landscape's open registry; the seed config's override points at the
 * secured registry, whose credentials are the KCP's pull Secret; the rotation moves the seed image
 * to the open registry as a new mirror.
 */
/** The step at which the first mutated Pod runs: the figure `rtb local` prints for it. */
export const SEED_RUNNING_STEP = 'seed Pod Running (its image pulled with the injected Secret)';

export async function startNodeHosting(o: {
  plane: ControlPlane;
  runtimes: readonly LocalCluster[];
  image: RtbImage;
  pause: PauseImage;
}): Promise<WebhookHosting> {
  const registries = await startLandscapeRegistries({
    dir: join(o.plane.dir, 'registries'),
    image: o.image,
    pause: o.pause,
  });
  try {
    for (const rt of o.runtimes) {
      if (!rt.node) throw new ControlPlaneError(`runtime ${rt.name} has no node`);
      await rt.node.addPlainHttpRegistry(registries.open.host);
      await rt.node.addPlainHttpRegistry(registries.secured.host);
      // The webhooks' preflight runs in their Pods, which cannot reach loopback: each node
      // forwards the registries' ports from its own IP.
      for (const r of [registries.open, registries.secured]) await rt.node.exposeToPods(portOf(r.host));
    }
  } catch (error) {
    await registries.stop();
    throw error;
  }
  const { open, secured } = registries;
  const securedAuth = JSON.parse(secured.dockerConfigJson()) as { auths: Record<string, unknown> };
  const configText = configWithTarget(secured.host);
  const bundle = parseWebhookConfig(configText).clusterTrustBundle;
  return {
    onNode: true,
    sources: { configText, dockerConfigJson: secured.dockerConfigJson() },
    rotated: {
      configText: configWithTarget(open.host),
      // New content (an entry for the mirror besides the secured registry's), still valid.
      dockerConfigJson: JSON.stringify({
        auths: {
          ...securedAuth.auths,
          [open.host]: { auth: Buffer.from('mirror:anonymous').toString('base64') },
        },
      }),
      mirror: open.host,
    },
    releaseImage: registries.openImage,
    registryServers: Object.fromEntries(
      [open, secured].map((r) => [r.host, `http://${HOST_IP_REFERENCE}:${portOf(r.host)}`]),
    ),
    serve: () => Promise.resolve(),
    async showRunning(rt: LocalCluster, pod: V1Pod, say: (l: string) => void, clock?: PhaseClock) {
      const name = pod.metadata?.name ?? '';
      const running = await waitPodRunning(rt, name);
      clock?.mark(SEED_RUNNING_STEP);
      say(
        `  ✓ Running on ${running.spec?.nodeName ?? 'the node'}: ${(await pulledMessage(rt, name)) ?? 'image present'}`,
      );
      if (!bundle) return;
      const file = `${bundle.volumeMountPath}/${bundle.certWritePath}`;
      const view = await inspectContainer(rt.kubeConfig(), {
        namespace: running.metadata?.namespace ?? 'default',
        pod: name,
        container: running.spec?.containers[0]?.name ?? '',
        image: registries.openImage,
        files: [file],
      });
      const seen = view.files[file];
      if (!seen || 'error' in seen)
        throw new ControlPlaneError(
          `${file} is not readable inside ${name} on ${rt.name}: ${seen?.error ?? 'not read'}`,
        );
      const kc = rt.kubeConfig();
      const ctb = await trustBundleApis.atServed(kc, (api) =>
        kubeRequest<{ spec?: { trustBundle?: string } }>(kc, {
          method: 'GET',
          path: `${api.path}/${encodeURIComponent(bundle.name)}`,
        }),
      );
      const same = seen.text.trim() === (ctb.spec?.trustBundle ?? '').trim();
      say(`  ✓ inside the container, ${file} starts with: ${seen.text.split('\n')[0] ?? ''}`);
      say(
        `    (${seen.text.length} bytes, ${same ? 'the same PEM as' : 'NOT the PEM of'} ClusterTrustBundle ${bundle.name}); ${FIPS_ENV}=${view.env[FIPS_ENV] ?? '(unset)'} in its environment`,
      );
      clock?.mark('seen from inside (an ephemeral container)');
    },
    stop: () => registries.stop(),
  };
}
