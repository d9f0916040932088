/**
 * What direct mode watches on the KCP: the RuntimeBootstrappers and KIM's kubeconfig Secrets
 * (only those, by label), with an index from runtime ID and from Secret to the CRs, and which
 * changes ask for a reconcile: a new CR, a CR changed where it matters (bootstrapper-events.ts),
 * a rotated kubeconfig (the runtimes using it reconnect), a Secret that was missing (the runtimes
 * that failed for want of it try again).
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { type RuntimeBootstrapper, runtimeBootstrappersPath } from '../../api/runtime-bootstrapper.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { createListerWatcher } from '../../kube/list-watch.js';
import { Reflector } from '../../kube/reflector.js';
import { stripManagedFields } from '../../kube/reflector-options.js';
import type { ReadonlyStore } from '../../kube/store.js';
import { Listeners } from '../../process/listeners.js';
import { needsReconcile } from './bootstrapper-events.js';
import { BootstrapperIndex, type BootstrapperIdentity } from './bootstrapper-index.js';

/** What the caches tell the parts built after them (each registers as it is built). */
export interface DirectCacheEvents {
  /** `key` needs a reconcile. */
  readonly reconcile: Listeners<[key: string]>;
  /** A RuntimeBootstrapper was added (`old` undefined) or updated, whether or not it needs a reconcile. */
  readonly changed: Listeners<[old: RuntimeBootstrapper | undefined, next: RuntimeBootstrapper]>;
  /** A RuntimeBootstrapper is gone. */
  readonly removed: Listeners<[rb: RuntimeBootstrapper]>;
}

const keyOf = (rb: RuntimeBootstrapper): string => `${rb.metadata.namespace}/${rb.metadata.name}`;

/** See the file comment. */
export class DirectCaches {
  private readonly rbs: Reflector<RuntimeBootstrapper>;
  private readonly secrets: Reflector<V1Secret>;
  private readonly index = new BootstrapperIndex();
  /** Listened to by the queue, the rollout and the drift repairs; told once the watches run. */
  readonly on: DirectCacheEvents = {
    reconcile: new Listeners(),
    changed: new Listeners(),
    removed: new Listeners(),
  };

  constructor(o: {
    readonly kcp: ClusterAccess;
    readonly namespace: string;
    /** Label selector of KIM's kubeconfig Secrets. */
    readonly kubeconfigSelector: string;
    readonly logger: Logger;
  }) {
    this.rbs = new Reflector<RuntimeBootstrapper>({
      name: 'runtimebootstrappers',
      listerWatcher: createListerWatcher<RuntimeBootstrapper>(o.kcp, runtimeBootstrappersPath(o.namespace)),
      transform: stripManagedFields,
      logger: o.logger,
    });
    this.secrets = new Reflector<V1Secret>({
      name: 'kubeconfig secrets',
      listerWatcher: createListerWatcher<V1Secret>(o.kcp, `/api/v1/namespaces/${o.namespace}/secrets`),
      transform: stripManagedFields,
      // Only KIM's kubeconfig Secrets, never every Secret of the namespace.
      labelSelector: o.kubeconfigSelector,
      logger: o.logger,
    });
    const reconcile = (key: string): void => {
      this.on.reconcile.emit(key);
    };
    this.rbs.addEventHandler({
      onAdd: (rb) => {
        this.index.put(rb);
        reconcile(keyOf(rb));
        // The others that share its kubeconfig Secret learn of it.
        for (const key of this.index.identityOf(rb).sharesKubeconfigWith) reconcile(key);
        this.on.changed.emit(undefined, rb);
      },
      onUpdate: (old, rb) => {
        this.index.put(rb);
        if (needsReconcile(old, rb)) reconcile(keyOf(rb));
        this.on.changed.emit(old, rb);
      },
      onDelete: (rb) => {
        const sharing = this.index.identityOf(rb).sharesKubeconfigWith;
        this.index.remove(rb);
        // A CR refused for its runtime ID may hold it now; the others' shared-kubeconfig warning may go.
        for (const key of new Set([...this.index.keysOfRuntime(rb.spec.runtimeID), ...sharing]))
          reconcile(key);
        this.on.removed.emit(rb);
      },
    });
    const usersOf = (secret: V1Secret): readonly string[] =>
      this.index.keysOfSecret(secret.metadata?.namespace ?? '', secret.metadata?.name ?? '');
    this.secrets.addEventHandler({
      onUpdate: (_old, secret) => {
        for (const key of usersOf(secret)) reconcile(key);
      },
      onAdd: (secret) => {
        for (const key of usersOf(secret))
          if (this.rbs.store.get(key)?.status?.state === 'Error') reconcile(key);
      },
    });
  }

  /** The RuntimeBootstrappers. */
  get bootstrappers(): ReadonlyStore<RuntimeBootstrapper> {
    return this.rbs.store;
  }

  /** KIM's kubeconfig Secrets. */
  get kubeconfigs(): ReadonlyStore<V1Secret> {
    return this.secrets.store;
  }

  /** The key of a runtime's RuntimeBootstrapper, if any. */
  keyOfRuntime(runtimeId: string): string | undefined {
    return this.index.keyOfRuntime(runtimeId);
  }

  /** Who else claims the runtime ID and the kubeconfig Secret `rb` names. */
  identityOf(rb: RuntimeBootstrapper): BootstrapperIdentity {
    return this.index.identityOf(rb);
  }

  /** The key of every RuntimeBootstrapper. */
  keys(): string[] {
    return this.rbs.store.list().map(keyOf);
  }

  /** Starts both watches; resolves once both listed. */
  async start(): Promise<void> {
    this.rbs.start();
    this.secrets.start();
    await Promise.all([this.rbs.waitForSync(), this.secrets.waitForSync()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.rbs.stop(), this.secrets.stop()]);
  }
}
