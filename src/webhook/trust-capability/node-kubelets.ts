/**
 * The kubelet versions of the runtime's nodes, followed (a reflector over Nodes), and the probe's
 * finding with them weighed in (../../api/kubelet-skew.ts): where some node's kubelet cannot read
 * the ClusterTrustBundle version served, the webhook mounts no bundle, warns, counts and reports
 * which pools are too old. A Node carries up to 50 images and more in its status, so only its
 * name, its pool label and its kubelet's version are kept.
 */
import type { Logger } from 'pino';
import {
  describeOldKubelets,
  KUBELET_VERSION_MAX_CHARS,
  NODE_POOL_LABEL,
  nodeKubeletOf,
  oldKubeletPools,
  type NodeKubelet,
} from '../../api/kubelet-skew.js';
import {
  API_NOT_SERVED,
  API_UNKNOWN,
  sameCapability,
  type TrustBundleCapability,
} from '../../api/trust-bundle-capability.js';
import { setTimeout as delay } from 'node:timers/promises';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { KubeApiError, statusCodeOf } from '../../kube/kube-errors.js';
import type {
  ListerWatcher,
  ListOptions,
  ListResult,
  WatchEventCallback,
  WatchOptions,
} from '../../kube/lister-watcher.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import { Reflector } from '../../kube/reflector.js';
import type { ReflectorLogger } from '../../kube/reflector-options.js';
import type { CapabilityProber } from './capability-prober.js';

/** What the node cache holds of a Node. */
interface NodeView {
  metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string> };
  status?: { nodeInfo?: { kubeletVersion?: unknown } };
}

/** The cached form of a Node (the reflector's transform; pure). */
export function nodeViewOf(node: NodeView): NodeView {
  const m = node.metadata ?? {};
  const pool = m.labels?.[NODE_POOL_LABEL];
  const version = node.status?.nodeInfo?.kubeletVersion;
  return {
    metadata: {
      name: m.name,
      resourceVersion: m.resourceVersion,
      labels: typeof pool === 'string' ? { [NODE_POOL_LABEL]: pool } : undefined,
    },
    // One character past the bound, so a longer version still reads as not understood.
    status: {
      nodeInfo: {
        kubeletVersion:
          typeof version === 'string' ? version.slice(0, KUBELET_VERSION_MAX_CHARS + 1) : undefined,
      },
    },
  };
}

const sameView = (a: NodeView, b: NodeView): boolean =>
  a.metadata?.labels?.[NODE_POOL_LABEL] === b.metadata?.labels?.[NODE_POOL_LABEL] &&
  a.status?.nodeInfo?.kubeletVersion === b.status?.nodeInfo?.kubeletVersion;

/** The resourceVersion of the empty list that stands for nodes the webhook may not list. */
const FORBIDDEN = 'forbidden';

/**
 * Nodes the webhook may not list (a 403: RBAC of a release before this check) read as none, so
 * the reflector syncs and the webhook becomes ready and mounts as it did before; listed again
 * every `recheckMs` (the watch of that empty list ends as expired).
 */
export function forbiddenAsNone<T>(
  inner: ListerWatcher<T>,
  onForbidden: (forbidden: boolean) => void,
  recheckMs = 60_000,
): ListerWatcher<T> {
  return {
    async list(opts: ListOptions, signal: AbortSignal): Promise<ListResult<T>> {
      try {
        const listed = await inner.list(opts, signal);
        onForbidden(false);
        return listed;
      } catch (error) {
        if (statusCodeOf(error) !== 403) throw error;
        onForbidden(true);
        return { items: [], resourceVersion: FORBIDDEN };
      }
    },
    async watch(opts: WatchOptions, onEvent: WatchEventCallback<T>, signal: AbortSignal): Promise<void> {
      if (opts.resourceVersion !== FORBIDDEN) {
        await inner.watch(opts, onEvent, signal);
        return;
      }
      try {
        await delay(recheckMs, undefined, { signal });
      } catch {
        return; // aborted: the reflector stops
      }
      throw new KubeApiError('nodes were forbidden; listing again', { statusCode: 410, reason: 'Expired' });
    },
  };
}

/** The nodes' kubelets, followed. */
export class NodeKubelets {
  private readonly reflector: Reflector<NodeView>;
  private readonly listeners = new Set<() => void>();
  private forbidden = false;

  constructor(access: ClusterAccess, logger: ReflectorLogger, recheckMs?: number) {
    const changed = (): void => {
      for (const l of [...this.listeners]) l();
    };
    const onForbidden = (forbidden: boolean): void => {
      if (forbidden && !this.forbidden)
        logger.warn(
          { reflector: 'nodes' },
          "nodes may not be listed (403): the nodes' kubelet versions are not checked before the trust-bundle mount",
        );
      this.forbidden = forbidden;
    };
    this.reflector = new Reflector<NodeView>({
      name: 'nodes',
      listerWatcher: forbiddenAsNone(
        new KubeListWatch<NodeView>(access, '/api/v1/nodes'),
        onForbidden,
        recheckMs,
      ),
      transform: nodeViewOf,
      logger,
      // A heartbeat rewrites a Node's status every few minutes: only a new pool or version counts.
      handlers: {
        onAdd: changed,
        onUpdate: (before, after) => {
          if (!sameView(before, after)) changed();
        },
        onDelete: changed,
      },
    });
  }

  start(): void {
    this.reflector.start();
    // No node at all sends no event: the end of the first list is one too.
    this.reflector.waitForSync().then(
      () => {
        for (const l of [...this.listeners]) l();
      },
      () => undefined,
    );
  }

  stop(): Promise<void> {
    return this.reflector.stop();
  }

  hasSynced(): boolean {
    return this.reflector.hasSynced();
  }

  /** The nodes as the cache holds them now. */
  nodes(): NodeKubelet[] {
    return this.reflector.store.list().map(nodeKubeletOf);
  }

  /** Called after a node came, went, or changed its pool or kubelet version. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/**
 * The probe's finding (which names no kubelets) with the kubelets weighed in (pure): `kubelets` names the pools whose
 * kubelets read none of the versions served. Where the API is not served or not known, the
 * nodes say nothing more.
 */
export function withKubelets(
  probe: TrustBundleCapability,
  nodes: readonly NodeKubelet[],
): TrustBundleCapability {
  if (probe.api === API_NOT_SERVED || probe.api === API_UNKNOWN) return probe;
  const group = probe.api.slice(0, probe.api.lastIndexOf('/') + 1);
  const served = probe.servedVersions ?? [probe.api.slice(group.length)];
  const kubelets = describeOldKubelets(
    oldKubeletPools(served, nodes),
    served.map((v) => `${group}${v}`),
  );
  return kubelets === undefined ? probe : { ...probe, kubelets };
}

/** The finding the webhook acts on and reports: the probe's, and the nodes'. */
export interface TrustCapability {
  /** Undefined until the first probe ended and the nodes were listed. */
  current(): TrustBundleCapability | undefined;
  /** Called when the finding changes; returns the unsubscribe. */
  onChange(listener: (capability: TrustBundleCapability) => void): () => void;
}

/**
 * Joins the prober and the node cache: recomputed when either changes (nodes lazily, at the next
 * read or a turn of the event loop after a burst, so a list of thousands costs one pass).
 */
export function trustCapability(
  prober: CapabilityProber,
  nodes: NodeKubelets | undefined,
  logger: Logger,
): TrustCapability {
  const listeners = new Set<(capability: TrustBundleCapability) => void>();
  let known: TrustBundleCapability | undefined;
  let dirty = true;
  let scheduled = false;

  const compute = (): void => {
    const probe = prober.current();
    if (probe === undefined || (nodes !== undefined && !nodes.hasSynced())) return;
    dirty = false;
    const next = nodes === undefined ? probe : withKubelets(probe, nodes.nodes());
    if (sameCapability(next, known)) return;
    if (next.kubelets !== known?.kubelets)
      logger[next.kubelets === undefined ? 'info' : 'warn'](
        { kubelets: next.kubelets ?? 'every node can read the served version' },
        "the nodes' kubelets and the trust-bundle mount",
      );
    known = next;
    for (const l of [...listeners]) {
      try {
        l(next);
      } catch (error) {
        logger.error({ err: error }, 'trust-bundle capability listener threw');
      }
    }
  };
  const soon = (): void => {
    dirty = true;
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      if (dirty) compute();
    });
  };
  prober.onChange(soon);
  nodes?.onChange(soon);
  return {
    current: () => {
      if (dirty) compute();
      return known;
    },
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
