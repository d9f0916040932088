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

/** A running mirror. */
export interface RuntimeMirror {
  stop(): Promise<void>;
}

/**
 * Keeps one RuntimeBootstrapper per KIM `Runtime` (named like it, filtered by a label
 * selector) and deletes it with the Runtime; its finalizer then cleans up the runtime.
 * No garbage collector is assumed (KCP tests run without kube-controller-manager).
 * Across replicas (`shard`), only the replica that works a runtime creates or deletes its
 * RuntimeBootstrapper, so the replicas do not race each other's writes; a runtime no replica
 * works for a moment (a handover) is looked at again once membership moved.
 */
export async function startRuntimeMirror(o: {
  kcp: ClusterAccess;
  namespace: string;
  selector: string;
  bootstrappers: ReadonlyStore<RuntimeBootstrapper>;
  logger: Logger;
  shard?: Pick<ShardedWork, 'runOn' | 'onMembershipChange'>;
}): Promise<RuntimeMirror> {
  const runtimes = new Reflector<KubernetesObject>({
    name: 'runtimes',
    listerWatcher: createListerWatcher<KubernetesObject>(
      o.kcp,
      `/apis/infrastructuremanager.kyma-project.io/v1/namespaces/${o.namespace}/runtimes`,
    ),
    ...(o.selector ? { labelSelector: o.selector } : {}),
    logger: o.logger,
  });
  const queue = new WorkQueue({ name: 'runtime-mirror' });
  const enqueue = (obj: KubernetesObject): void => {
    if (obj.metadata?.name) queue.add(obj.metadata.name);
  };
  runtimes.addEventHandler({ onAdd: enqueue, onDelete: enqueue });
  const base = runtimeBootstrappersPath(o.namespace);
  runtimes.start();
  await runtimes.waitForSync();
  const enqueueAll = (): void => {
    for (const r of runtimes.store.list()) enqueue(r);
    // Bootstrappers whose Runtime vanished while we were not running.
    for (const rb of o.bootstrappers.list())
      if (rb.metadata.labels?.[MIRRORED_LABEL] === 'true') queue.add(rb.metadata.name);
  };
  enqueueAll();
  const unsubscribe = o.shard?.onMembershipChange(enqueueAll);
  const mirror = async (name: string): Promise<void> => {
    const decision = decideMirror(
      runtimes.store.get(`${o.namespace}/${name}`) !== undefined,
      o.bootstrappers.get(`${o.namespace}/${name}`),
    );
    if (decision === 'create') {
      const body = newRuntimeBootstrapper(name, o.namespace, {
        labels: { [MIRRORED_LABEL]: 'true', [RUNTIME_ID_LABEL]: name },
      });
      try {
        await kubeRequest(o.kcp, { method: 'POST', path: base, body });
        o.logger.info({ runtime: name }, 'RuntimeBootstrapper created for a Runtime');
      } catch (error) {
        if (statusCodeOf(error) !== 409) throw error;
      }
    } else if (decision === 'delete') {
      try {
        await kubeRequest(o.kcp, { method: 'DELETE', path: `${base}/${name}` });
        o.logger.info({ runtime: name }, 'RuntimeBootstrapper deleted with its Runtime');
      } catch (error) {
        if (statusCodeOf(error) !== 404) throw error;
      }
    }
  };
  const running = queue.start(
    async (name) => {
      // The runtime ID is the Runtime's name; another replica's runtime is its to mirror.
      await (o.shard ? o.shard.runOn(name, () => mirror(name)) : mirror(name));
    },
    { concurrency: 4 },
  );
  return {
    async stop() {
      unsubscribe?.();
      await queue.shutDownWithDrain();
      await running;
      await runtimes.stop();
    },
  };
}
