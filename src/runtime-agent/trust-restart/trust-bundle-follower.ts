/**
 * Follows the ClusterTrustBundle the configuration names: one watch on that one object (a field
 * selector), rebuilt when the name changes (../kube/latest-follower.ts), at the API version the
 * runtime serves (../kube/trust-bundle-list-watch.ts: found by discovery, found again after an
 * upgrade; where none is served the bundle is unknown). The admission path reads the hash in force
 * from here (the Pods' stamp), the restarter is told of every content change, and the webhook's
 * set version counts the bundle's content version (../webhook/set-revision.ts).
 */
import type { Logger } from 'pino';
import { CONTENT_VERSION_ANNOTATION } from '../../api/set-version.js';
import type { WebhookConfig } from '../../api/webhook-config.js';
import { trustBundleChangedAt, trustBundleHash, type TrustBundleObject } from '../../api/trust-stamp.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { Reflector } from '../../kube/reflector.js';
import type { TrustBundleApi } from '../../kube/trust-bundle-api.js';
import type { TrustBundleApis } from '../../kube/trust-bundle-discovery.js';
import { TrustBundleListWatch } from '../../kube/trust-bundle-list-watch.js';
import { LatestFollower } from '../../kube/latest-follower.js';

/** The bundle in force as the webhook knows it. */
export interface KnownBundle {
  readonly name: string;
  /** SHA-256 hex of `.spec.trustBundle`. */
  readonly hash: string;
  /** The KCP's content version on the object (../api/set-version.ts); undefined: none. */
  readonly contentVersion: string | undefined;
  /** When its content last changed (API server's clock, epoch ms; NaN if unknown). */
  readonly changedAtMs: number;
  /** When this process first saw this content (its own clock, epoch ms). */
  readonly seenAtMs: number;
}

type BundleObject = TrustBundleObject & {
  metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
};

/** Reads the bundle in force; see the file comment. */
export interface TrustBundleFollower {
  /** The bundle in force, undefined while unknown (not configured, not read yet, or missing). */
  current(): KnownBundle | undefined;
  /**
   * Called whenever {@link current} changes its name, hash or content version (or becomes
   * unknown); returns the unsubscribe.
   */
  onChange(listener: (bundle: KnownBundle | undefined) => void): () => void;
  /**
   * Whether {@link current} answers for the bundle the configuration in force names: none is
   * named, or its watch has listed (a bundle missing then is known to be missing).
   */
  settled(): boolean;
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
  /**
   * Told when {@link TrustBundleFollower.settled} turns true: a missing bundle changes nothing
   * else, and the webhook's set version waits for it (../webhook/set-revision.ts).
   */
  readonly onSettled?: () => void;
}): TrustBundleFollower {
  const now = o.now ?? Date.now;
  const listeners = new Set<(bundle: KnownBundle | undefined) => void>();
  let known: KnownBundle | undefined;
  // The name followed now, and whether its watch has listed: until then a missing bundle may
  // only not be read yet. Undefined while switching names.
  let running: { readonly name: string | undefined; listed: boolean } | undefined;
  const same = (a: KnownBundle | undefined, b: KnownBundle | undefined): boolean =>
    a?.hash === b?.hash && a?.name === b?.name && a?.contentVersion === b?.contentVersion;
  const set = (next: KnownBundle | undefined): void => {
    if (same(next, known)) return;
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
    const contentVersion = obj.metadata?.annotations?.[CONTENT_VERSION_ANNOTATION];
    // The same content keeps when it was first seen (the restarter's clock).
    if (same({ name, hash, contentVersion, changedAtMs: 0, seenAtMs: 0 }, known)) return;
    set({ name, hash, contentVersion, changedAtMs: trustBundleChangedAt(obj), seenAtMs: now() });
  };
  const follower = new LatestFollower<string | undefined, Reflector<BundleObject> | undefined>({
    start: (name) => {
      set(undefined);
      const state = { name, listed: name === undefined };
      running = state;
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
      reflector.waitForSync().then(
        () => {
          state.listed = true;
          // Only while this watch is the one running (a later name may have replaced it).
          if (running === state) o.onSettled?.();
        },
        () => undefined, // stopped first: a later watch settles
      );
      return reflector;
    },
    stop: async (reflector) => {
      running = undefined;
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
    settled: () => running !== undefined && running.listed && running.name === nameInForce(),
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => follower.close(),
  };
}
