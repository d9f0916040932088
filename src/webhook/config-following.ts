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
import type { DriftForwarder } from '../drift/drift-forwarder.js';
import type { ConfigHolder } from './config-holder.js';
import { connectConfigMapSource } from './configmap-config-source.js';
import { FileConfigSource } from './file-config-source.js';
import { SetRevision, type SetParts } from './set-revision.js';
import { WebhookStatusReporter } from './status-reporter.js';
import type { Part } from '../process/part-group.js';

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

/** What the config feeds. */
export interface ConfigFollowingParts {
  readonly holder: ConfigHolder;
  readonly logger: Logger;
  readonly reflectorLogger: Logger;
  /** Reads the set's other parts (the pull Secret's and the bundle's watches) for its version. */
  readonly setParts: () => SetParts;
  /**
   * The drift channel, told of each new trust-bundle finding the report holds
   * (./status-reporter.ts); none without it.
   */
  readonly kcp?: Pick<DriftForwarder, 'send'>;
}

/** The config's source, to start as a part of the process. */
export interface ConfigSource extends Part {
  /** The status reporter, when a status ConfigMap is named (it reports more than the config: ./status-reporter.ts). */
  readonly reporter: WebhookStatusReporter | undefined;
  /**
   * The revision of the ConfigMap's text (not with a file), to be told when the set's other parts
   * change (./set-revision.ts).
   */
  readonly revision: SetRevision | undefined;
}

/**
 * The config's source, not started: a file is read before its start resolves, a ConfigMap is
 * followed from its start on (each text offered under the set version it makes up).
 */
export function configSource(o: ConfigSourceSettings, parts: ConfigFollowingParts): ConfigSource {
  if (o.configFile) {
    const fileSource = new FileConfigSource(
      o.configFile,
      parts.holder,
      parts.logger.child({ part: 'config' }),
    );
    return {
      name: 'config file',
      reporter: undefined,
      revision: undefined,
      start: () => fileSource.start(),
      stop: () => {
        fileSource.stop();
      },
    };
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
    ? new WebhookStatusReporter(
        o.kubeConfig,
        o.statusConfigMap,
        parts.logger.child({ part: 'status' }),
        parts.kcp,
      )
    : undefined;
  const revision = new SetRevision(
    parts.holder,
    parts.setParts,
    reporter
      ? (version, offer) => {
          reporter.offered(version, offer);
        }
      : undefined,
  );
  connectConfigMapSource({ reflector: configReflector, key: cm.key, revision, logger: parts.logger });
  return {
    name: 'config map',
    reporter,
    revision,
    start: () => {
      configReflector.start();
    },
    stop: async () => {
      await configReflector.stop();
      reporter?.stop();
    },
  };
}
