import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { LocalCluster } from '../envtest/control-plane.js';
import { localWebhookConfigText } from './embedded-defaults.js';
import { placeholderDockerConfig } from './landscape-sources.js';
import { installLocalWebhook, type LocalWebhook } from './local-webhook.js';
import type { PhaseClock } from './phase-timings.js';

/** The KCP's sources as a hosting wants them: the webhook config and the pull Secret's content. */
export interface HostedSources {
  readonly configText: string;
  readonly dockerConfigJson: string;
}

/** Where the runtimes' webhooks run in the local landscape, and what that changes. */
export interface WebhookHosting {
  /** True when the webhooks are Pods on a node per runtime. */
  readonly onNode: boolean;
  /** The sources the KCP starts with. */
  readonly sources: HostedSources;
  /** The demonstration's rotation: new sources, and the registry the seed image then comes from. */
  readonly rotated: HostedSources & { readonly mirror: string };
  /** The image direct mode installs (default: the release's). */
  readonly releaseImage: string | undefined;
  /** Where the webhooks' preflight reaches the landscape's registries (`--registry-server`). */
  readonly registryServers: Readonly<Record<string, string>> | undefined;
  /** Once the controller runs: serves the runtimes (nothing to do when the controller's Deployments run). */
  serve(runtimes: readonly LocalCluster[]): Promise<void>;
  /**
   * After a seed Pod was created: shows it running, as seen from inside (only where Pods run);
   * marks on `clock` when it ran and when it was seen.
   */
  showRunning(rt: LocalCluster, pod: V1Pod, say: (l: string) => void, clock?: PhaseClock): Promise<void>;
  stop(): Promise<void>;
}

/** Where the embedded default's override sends the seed image; the rotation's mirror replaces it. */
const DEFAULT_TARGET = 'ghcr.io';
const ROTATED_MIRROR = 'mirror.landscape.local/ghcr';

/**
 * The webhooks served from this process on loopback (no node here): the embedded default as it
 * is, placeholder pull credentials, and a webhook per runtime that reads the config the
 * controller wrote; the controller's own Deployments never run.
 */
export function inProcessHosting(logger: Logger): WebhookHosting {
  const webhooks: LocalWebhook[] = [];
  const configText = localWebhookConfigText();
  return {
    onNode: false,
    sources: { configText, dockerConfigJson: placeholderDockerConfig('local:landscape') },
    rotated: {
      configText: configText.replace(`"${DEFAULT_TARGET}"`, `"${ROTATED_MIRROR}"`),
      dockerConfigJson: placeholderDockerConfig('rotated:credentials'),
      mirror: ROTATED_MIRROR,
    },
    releaseImage: undefined,
    registryServers: undefined,
    async serve(runtimes) {
      for (const rt of runtimes) webhooks.push(await installLocalWebhook(rt, { logger }));
    },
    showRunning: () => Promise.resolve(),
    async stop() {
      for (const w of webhooks.splice(0)) await w.stop();
    },
  };
}

/** The embedded default with `replace.me` sent to `target`. */
export function configWithTarget(target: string): string {
  const config = JSON.parse(localWebhookConfigText()) as { overrides?: Record<string, string> };
  return `${JSON.stringify({ ...config, overrides: { ...config.overrides, 'replace.me': target } }, null, 2)}\n`;
}
