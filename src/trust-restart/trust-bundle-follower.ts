/**
 * Follows the ClusterTrustBundle the configuration names: one watch on that one object (a field
 * selector), rebuilt when the name changes (../kube/latest-follower.ts), at the API version the
 * runtime serves (../kube/trust-bundle-list-watch.ts: found by discovery, found again after an
 * upgrade; where none is served the bundle is unknown). The admission path reads the hash in force
 * from here (the Pods' stamp) and the restarter is told of every content change.
 */
import type { Logger } from 'pino';
import type { WebhookConfig } from '../api/webhook-config.js';
import { trustBundleChangedAt, trustBundleHash, type TrustBundleObject } from '../api/trust-stamp.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { Reflector } from '../kube/reflector.js';
import type { TrustBundleApi } from '../kube/trust-bundle-api.js';
import type { TrustBundleApis } from '../kube/trust-bundle-discovery.js';
import { TrustBundleListWatch } from '../kube/trust-bundle-list-watch.js';
import { LatestFollower } from '../kube/latest-follower.js';

/** The bundle in force as the webhook knows it. */
export interface KnownBundle {
  readonly name: string;
  /** SHA-256 hex of `.spec.trustBundle`. */
  readonly hash: string;
  /** When its content last changed (API server's clock, epoch ms; NaN if unknown). */
  readonly changedAtMs: number;
  /** When this process first saw this content (its own clock, epoch ms). */
  readonly seenAtMs: number;
}

type BundleObject = TrustBundleObject & { metadata?: { name?: string; resourceVersion?: string } };

/** Reads the bundle in force; see the file comment. */
export interface TrustBundleFollower {
  /** The bundle in force, undefined while unknown (not configured, not read yet, or missing). */
  current(): KnownBundle | undefined;
  /** Called whenever {@link current} changes its hash (or becomes unknown); returns the unsubscribe. */
  onChange(listener: (bundle: KnownBundle | undefined) => void): () => void;
  close(): Promise<void>;
}

/** Starts following the bundle named by the configuration in force. */
export function followTrustBundle(o: {
  readonly kubeConfig: ClusterAccess;
  /** The webhook's configuration in force, and its changes (the webhook's ConfigHolder). */
  readonly holder: {
    get(): WebhookConfig | undefined;
    onChange(listener: (config: WebhookConfig) => void): void;
  };
  readonly logger: Logger;
  readonly now?: () => number;
  /** Where the runtime's API version is remembered (default: the process's). */
  readonly apis?: TrustBundleApis;
  /** Told the API version each list of the bundle used (an upgrade shows here first). */
  readonly onApi?: (api: TrustBundleApi) => void;
}): TrustBundleFollower {
  const now = o.now ?? Date.now;
  const listeners = new Set<(bundle: KnownBundle | undefined) => void>();
  let known: KnownBundle | undefined;
  const set = (next: KnownBundle | undefined): void => {
    if (next?.hash === known?.hash && next?.name === known?.name) return;
    known = next;
    for (const l of listeners) l(next);
  };
  const offer = (name: string, obj: BundleObject | undefined): void => {
    const text = obj?.spec?.trustBundle;
    if (obj === undefined || typeof text !== 'string') {
      set(undefined);
      return;
    }
    const hash = trustBundleHash(text);
    if (hash === known?.hash && name === known.name) return;
    set({ name, hash, changedAtMs: trustBundleChangedAt(obj), seenAtMs: now() });
  };
  const follower = new LatestFollower<string | undefined, Reflector<BundleObject> | undefined>({
    start: (name) => {
      set(undefined);
      if (name === undefined) return undefined;
      const reflector = new Reflector<BundleObject>({
        name: `clustertrustbundle ${name}`,
        listerWatcher: new TrustBundleListWatch<BundleObject>(o.kubeConfig, { apis: o.apis, onApi: o.onApi }),
        fieldSelector: `metadata.name=${name}`,
        logger: o.logger,
        // managedFields stay: they tell when the content last changed.
      });
      reflector.addEventHandler({
        onAdd: (b) => {
          offer(name, b);
        },
        onUpdate: (_old, b) => {
          offer(name, b);
        },
        onDelete: () => {
          offer(name, undefined);
        },
      });
      reflector.start();
      return reflector;
    },
    stop: async (reflector) => {
      await reflector?.stop();
    },
    same: (a, b) => a === b,
    onError: (error, phase) => {
      o.logger.error({ err: error }, `cannot ${phase} following the ClusterTrustBundle`);
    },
  });
  const nameInForce = (): string | undefined => o.holder.get()?.clusterTrustBundle?.name;
  o.holder.onChange(() => {
    follower.follow(nameInForce());
  });
  follower.follow(nameInForce());
  return {
    current: () => known,
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => follower.close(),
  };
}
