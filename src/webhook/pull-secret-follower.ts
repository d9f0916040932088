import type { V1Namespace, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { CONTENT_VERSION_ANNOTATION } from '../api/set-version.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { KubeListWatch } from '../kube/list-watch.js';
import { Reflector } from '../kube/reflector.js';
import type { LogRateLimit } from '../telemetry/log-rate-limit.js';
import type { ConfigHolder } from './config-holder.js';
import { LatestFollower } from '../kube/latest-follower.js';
import type { MissingNamespaces } from './missing-namespaces.js';
import { PullSecretCopier, type SecretRef, type SecretWrites } from './pull-secret-copier.js';
import { UNKNOWN_PART, type SetPart } from './set-revision.js';
import type { WebhookMetrics } from './webhook-metrics.js';

/** One pull-Secret copier and the cache of Secrets of its name. */
export interface RunningCopier {
  readonly copier: PullSecretCopier;
  readonly secrets: Reflector<V1Secret>;
}

/** What {@link followPullSecret} needs from the webhook process. */
export interface PullSecretFollowerOptions {
  readonly kubeConfig: ClusterAccess;
  readonly core: SecretWrites;
  readonly namespaces: Reflector<V1Namespace>;
  readonly holder: ConfigHolder;
  readonly metrics: WebhookMetrics;
  readonly logger: Logger;
  readonly reflectorLogger: Logger;
  readonly missingNamespaces: MissingNamespaces;
  readonly logLimit: LogRateLimit;
  readonly excludedNamespaces?: readonly string[];
  /** Told when the source Secret may have changed: listed, added, updated or deleted (the set version counts it). */
  readonly onSourceChange?: () => void;
}

/** The pull Secret the configuration in force names (upstream's defaults without one). */
export function pullSecretRefOf(holder: ConfigHolder): SecretRef {
  const cfg = holder.get()?.imagePullSecret;
  return { name: cfg?.name ?? 'registry-credentials', namespace: cfg?.namespace ?? 'kyma-system' };
}

/**
 * Runs the pull-Secret copier for the Secret the configuration names, and rebuilds it (with its
 * Secret cache) when the name changes: one copier at a time, for the latest name, however quickly
 * the configuration changes (../kube/latest-follower.ts). Started at once for the configuration in force.
 */
export function followPullSecret(o: PullSecretFollowerOptions): LatestFollower<SecretRef, RunningCopier> {
  const logger = o.logger.child({ part: 'pull-secret-copier' });
  const follower = new LatestFollower<SecretRef, RunningCopier>({
    start: (ref) => {
      const secrets = new Reflector<V1Secret>({
        name: `secrets named ${ref.name}`,
        listerWatcher: new KubeListWatch<V1Secret>(o.kubeConfig, '/api/v1/secrets'),
        // Only Secrets of that name: the cache never holds the cluster's other Secrets.
        fieldSelector: `metadata.name=${ref.name}`,
        logger: o.reflectorLogger,
      });
      const copier = new PullSecretCopier({
        core: o.core,
        secrets,
        namespaces: o.namespaces,
        source: ref,
        metrics: o.metrics,
        logger,
        missingNamespaces: o.missingNamespaces,
        logLimit: o.logLimit,
        excludedNamespaces: o.excludedNamespaces,
      });
      if (o.onSourceChange) {
        const told = o.onSourceChange;
        // The cache holds the copies too: only the source counts.
        const source = (s: V1Secret): void => {
          if (s.metadata?.namespace === ref.namespace) told();
        };
        secrets.addEventHandler({
          onAdd: source,
          onUpdate: (_old, s) => {
            source(s);
          },
          onDelete: source,
        });
        // A Secret missing is known only once listed, and changes nothing else.
        secrets.waitForSync().then(told, () => undefined);
      }
      secrets.start();
      copier.start();
      return { copier, secrets };
    },
    stop: async ({ copier, secrets }) => {
      await copier.stop();
      await secrets.stop();
    },
    same: (a, b) => a.name === b.name && a.namespace === b.namespace,
    onError: (error, phase) => {
      logger.error({ err: error }, `cannot ${phase} the pull Secret copier`);
    },
  });
  o.holder.onChange(() => {
    follower.follow(pullSecretRefOf(o.holder));
  });
  follower.follow(pullSecretRefOf(o.holder));
  return follower;
}

/**
 * The content version of the pull Secret the configuration in force names (../api/set-version.ts),
 * known once the cache of that name has listed; unknown while the follower switches names.
 */
export function pullSecretPart(
  follower: LatestFollower<SecretRef, RunningCopier>,
  holder: ConfigHolder,
): SetPart {
  const ref = pullSecretRefOf(holder);
  const key = follower.currentKey;
  const running = follower.current;
  if (!running || key?.name !== ref.name || key.namespace !== ref.namespace || !running.secrets.hasSynced())
    return UNKNOWN_PART;
  const secret = running.secrets.store.get(`${ref.namespace}/${ref.name}`);
  return { known: true, version: secret?.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION] };
}
