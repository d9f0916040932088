/**
 * Where the webhook's config comes from: a file (`--config`, no revision), or the ConfigMap on its
 * runtime (watched, each content offered to the holder under the set version of the runtime's
 * objects, ./set-revision.ts; the outcome reported when a status ConfigMap is named, for the KCP
 * to read).
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONFIG_MAP_KEY, CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE } from '../api/webhook-features.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { KubeListWatch } from '../kube/list-watch.js';
import { Reflector } from '../kube/reflector.js';
import type { ConfigHolder } from './config-holder.js';
import { connectConfigMapSource } from './configmap-config-source.js';
import { FileConfigSource } from './file-config-source.js';
import { SetRevision } from './set-revision.js';
import { WebhookStatusReporter } from './status-reporter.js';
import type { StopStack } from './stop-stack.js';

/** The config's source, as `rtb webhook` was told. */
export interface ConfigSourceSettings {
  readonly kubeConfig: ClusterAccess;
  /** Read the config from this file instead of the ConfigMap. */
  readonly configFile?: string;
  /** Default: `kyma-system/rt-bootstrapper-config`, key `rt-bootstrapper-config.json`. */
  readonly configMap?: { readonly namespace: string; readonly name: string; readonly key: string };
  /** Report the set version loaded (or refused) in this ConfigMap (direct mode; off when undefined). */
  readonly statusConfigMap?: { readonly namespace: string; readonly name: string };
}

/** What the config feeds and how it is stopped. */
export interface ConfigFollowingParts {
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  readonly reflectorLogger: Logger;
  readonly stoppers: StopStack;
}

/** What following the config started, for the parts built after it. */
export interface FollowedConfig {
  /** The status reporter, when a status ConfigMap is named (it reports more than the config: ./status-reporter.ts). */
  readonly reporter: WebhookStatusReporter | undefined;
  /**
   * The revision of the ConfigMap's text (not with a file): to be connected to the parts of the
   * set, whose watches are built after the holder, and told of their changes.
   */
  readonly revision: SetRevision | undefined;
}

/** Starts following the config; a file is read before this resolves, a ConfigMap as it is listed. */
export async function followConfig(
  o: ConfigSourceSettings,
  parts: ConfigFollowingParts,
): Promise<FollowedConfig> {
  if (o.configFile) {
    const fileSource = new FileConfigSource(
      o.configFile,
      parts.holder,
      parts.logger.child({ part: 'config' }),
    );
    parts.stoppers.push(() => {
      fileSource.stop();
    });
    await fileSource.start();
    return { reporter: undefined, revision: undefined };
  }
  const cm = o.configMap ?? { namespace: CONFIG_MAP_NAMESPACE, name: CONFIG_MAP_NAME, key: CONFIG_MAP_KEY };
  const configReflector = new Reflector<V1ConfigMap>({
    name: `configmap ${cm.namespace}/${cm.name}`,
    listerWatcher: new KubeListWatch<V1ConfigMap>(
      o.kubeConfig,
      `/api/v1/namespaces/${cm.namespace}/configmaps`,
    ),
    fieldSelector: `metadata.name=${cm.name}`,
    logger: parts.reflectorLogger,
  });
  const reporter = o.statusConfigMap
    ? new WebhookStatusReporter(o.kubeConfig, o.statusConfigMap, parts.logger.child({ part: 'status' }))
    : undefined;
  if (reporter)
    parts.stoppers.push(() => {
      reporter.stop();
    });
  const revision = new SetRevision(
    parts.holder,
    reporter
      ? (version, offer) => {
          reporter.offered(version, offer);
        }
      : undefined,
  );
  connectConfigMapSource({ reflector: configReflector, key: cm.key, revision, logger: parts.logger });
  configReflector.start();
  parts.stoppers.push(() => configReflector.stop());
  return { reporter, revision };
}
