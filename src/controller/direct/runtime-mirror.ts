import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  type RuntimeBootstrapper,
  runtimeBootstrappersPath,
  newRuntimeBootstrapper,
  RUNTIME_ID_LABEL,
} from '../../api/runtime-bootstrapper.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { createListerWatcher } from '../../kube/list-watch.js';
import { Reflector } from '../../kube/reflector.js';
import type { ReadonlyStore } from '../../kube/store.js';
import { WorkQueue } from '../../kube/work-queue.js';
import type { ShardedWork } from './sharded-work.js';

/** Marks a RuntimeBootstrapper this mirror created, so it deletes only its own. */
export const MIRRORED_LABEL = 'rt-bootstrapper.kyma-project.io/mirrors-runtime';

/** What the mirror decided for one runtime (pure). */
export type MirrorDecision = 'create' | 'delete' | 'none';

/** Create a bootstrapper for a Runtime that has none; delete ours when its Runtime is gone. */
export function decideMirror(
  runtimeExists: boolean,
  bootstrapper: RuntimeBootstrapper | undefined,
): MirrorDecision {
  if (runtimeExists) return bootstrapper ? 'none' : 'create';
  if (bootstrapper?.metadata.labels?.[MIRRORED_LABEL] === 'true' && !bootstrapper.metadata.deletionTimestamp)
    return 'delete';
  return 'none';
}

/** What the mirror reads. */
export interface RuntimeMirrorOptions {
  readonly kcp: ClusterAccess;
  readonly namespace: string;
  /** Label selector of the Runtimes mirrored ('' = all). */
  readonly selector: string;
  readonly bootstrappers: ReadonlyStore<RuntimeBootstrapper>;
  readonly logger: Logger;
  readonly shard: Pick<ShardedWork, 'runOn' | 'onMembershipChange'> | undefined;
}

/**
 * Keeps one RuntimeBootstrapper per KIM `Runtime` (named like it, filtered by a label
 * selector) and deletes it with the Runtime; its finalizer then cleans up the runtime.
 * No garbage collector is assumed (KCP tests run without kube-controller-manager).
 * Across replicas (`shard`), only the replica that works a runtime creates or deletes its
 * RuntimeBootstrapper, so the replicas do not race each other's writes; a runtime no replica
 * works for a moment (a handover) is looked at again once membership moved.
 */
export class RuntimeMirror {
  readonly name = 'runtime mirror';
  private readonly runtimes: Reflector<KubernetesObject>;
  private readonly queue = new WorkQueue({ name: 'runtime-mirror' });
  private readonly base: string;
  private running: { worker: Promise<void>; unsubscribe: (() => void) | undefined } | undefined;

  constructor(private readonly o: RuntimeMirrorOptions) {
    this.base = runtimeBootstrappersPath(o.namespace);
    this.runtimes = new Reflector<KubernetesObject>({
      name: 'runtimes',
      listerWatcher: createListerWatcher<KubernetesObject>(
        o.kcp,
        `/apis/infrastructuremanager.kyma-project.io/v1/namespaces/${o.namespace}/runtimes`,
      ),
      // '' selects every Runtime: no selector at all.
      labelSelector: o.selector === '' ? undefined : o.selector,
      logger: o.logger,
    });
    const enqueue = (obj: KubernetesObject): void => {
      this.enqueue(obj);
    };
    this.runtimes.addEventHandler({ onAdd: enqueue, onDelete: enqueue });
  }

  /** Lists the Runtimes (resolves once listed), then mirrors them. */
  async start(): Promise<void> {
    this.runtimes.start();
    await this.runtimes.waitForSync();
    this.enqueueAll();
    const unsubscribe = this.o.shard?.onMembershipChange(() => {
      this.enqueueAll();
    });
    const worker = this.queue.start(
      async (name) => {
        // The runtime ID is the Runtime's name; another replica's runtime is its to mirror.
        await (this.o.shard ? this.o.shard.runOn(name, () => this.mirror(name)) : this.mirror(name));
      },
      { concurrency: 4 },
    );
    this.running = { worker, unsubscribe };
  }

  async stop(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    running?.unsubscribe?.();
    await this.queue.shutDownWithDrain();
    await running?.worker;
    await this.runtimes.stop();
  }

  private enqueue(obj: KubernetesObject): void {
    if (obj.metadata?.name) this.queue.add(obj.metadata.name);
  }

  private enqueueAll(): void {
    for (const r of this.runtimes.store.list()) this.enqueue(r);
    // Bootstrappers whose Runtime vanished while we were not running.
    for (const rb of this.o.bootstrappers.list())
      if (rb.metadata.labels?.[MIRRORED_LABEL] === 'true') this.queue.add(rb.metadata.name);
  }

  private async mirror(name: string): Promise<void> {
    const o = this.o;
    const decision = decideMirror(
      this.runtimes.store.get(`${o.namespace}/${name}`) !== undefined,
      o.bootstrappers.get(`${o.namespace}/${name}`),
    );
    if (decision === 'create') {
      // The cache lags our own create and another replica's before a handover: read the truth
      // first, so a repeat look (a membership change) does not race what was already written.
      if (await this.exists(name)) return;
      const body = newRuntimeBootstrapper(name, o.namespace, {
        labels: { [MIRRORED_LABEL]: 'true', [RUNTIME_ID_LABEL]: name },
      });
      try {
        await kubeRequest(o.kcp, { method: 'POST', path: this.base, body });
        o.logger.info({ runtime: name }, 'RuntimeBootstrapper created for a Runtime');
      } catch (error) {
        if (statusCodeOf(error) !== 409) throw error;
      }
    } else if (decision === 'delete') {
      try {
        await kubeRequest(o.kcp, { method: 'DELETE', path: `${this.base}/${name}` });
        o.logger.info({ runtime: name }, 'RuntimeBootstrapper deleted with its Runtime');
      } catch (error) {
        if (statusCodeOf(error) !== 404) throw error;
      }
    }
  }

  private async exists(name: string): Promise<boolean> {
    try {
      await kubeRequest(this.o.kcp, { method: 'GET', path: `${this.base}/${name}` });
      return true;
    } catch (error) {
      if (statusCodeOf(error) === 404) return false;
      throw error;
    }
  }
}
