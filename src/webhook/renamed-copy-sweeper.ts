import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { statusCodeOf } from '../kube/kube-errors.js';
import { kubeRequest } from '../kube/kube-request.js';
import {
  MANAGED_SECRETS_SELECTOR,
  planRenamedCopyRemoval,
  renamedCopies,
  type SecretId,
} from './renamed-copies.js';
import type { WebhookMetrics } from './webhook-metrics.js';

/** The reads and the delete the sweeper makes. */
export interface RenamedCopyCalls {
  /** Every Secret carrying our managed-by label, in every namespace: their metadata only. */
  listManagedSecrets(): Promise<V1ObjectMeta[]>;
  /** The Pods of a namespace that have not ended. */
  listLivePods(namespace: string): Promise<V1Pod[]>;
  /** Deletes one Secret, only if it still has `uid`. */
  deleteSecret(id: SecretId): Promise<unknown>;
}

const PAGE = 500;
/** A list answered with the items' metadata only: no Secret data ever reaches this process. */
const METADATA_ONLY = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';

interface ListPage<T> {
  readonly items?: T[];
  readonly metadata?: { readonly continue?: string };
}

async function listAll<T>(
  access: ClusterAccess,
  path: string,
  query: Record<string, string>,
  keep: (item: T) => T,
  accept?: string,
): Promise<T[]> {
  const out: T[] = [];
  let next: string | undefined;
  do {
    const page = await kubeRequest<ListPage<T>>(access, {
      method: 'GET',
      path,
      query: { ...query, limit: PAGE, continue: next },
      accept,
    });
    for (const item of page.items ?? []) out.push(keep(item));
    next = page.metadata?.continue || undefined;
  } while (next !== undefined);
  return out;
}

/** {@link RenamedCopyCalls} as raw requests through `access` (paged lists of 500). */
export function renamedCopyCalls(access: ClusterAccess): RenamedCopyCalls {
  return {
    listManagedSecrets: () =>
      listAll<{ metadata?: V1ObjectMeta }>(
        access,
        '/api/v1/secrets',
        { labelSelector: MANAGED_SECRETS_SELECTOR },
        (s) => ({ metadata: s.metadata ?? {} }),
        METADATA_ONLY,
      ).then((items) => items.map((s) => s.metadata ?? {})),
    listLivePods: (namespace) =>
      listAll<V1Pod>(
        access,
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
        { fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed' },
        (p) => ({ metadata: p.metadata ?? {}, spec: p.spec ?? { containers: [] }, status: p.status ?? {} }),
      ),
    deleteSecret: ({ namespace, name, uid }) =>
      kubeRequest<unknown>(access, {
        method: 'DELETE',
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
        // No uid (never from a list): an unconditioned delete; undefined drops out of the JSON.
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          preconditions: uid === undefined ? undefined : { uid },
        },
        parseResponse: false,
      }),
  };
}

/** What one sweep did. */
export interface SweepOutcome {
  readonly removed: number;
  /** Stale copies a live Pod still names. */
  readonly kept: number;
  /** Deletes or Pod reads that failed (retried by the next sweep). */
  readonly failed: number;
  /** The list of our Secrets was refused (403): the ServiceAccount lacks the right; nothing done. */
  readonly forbidden: boolean;
}

/** What {@link RenamedCopySweeper} needs. */
export interface RenamedCopySweeperOptions {
  readonly calls: RenamedCopyCalls;
  /** The pull-Secret name in force; undefined while no configuration is (nothing is swept then). */
  readonly currentName: () => string | undefined;
  readonly metrics: WebhookMetrics;
  readonly logger: Logger;
  /** While a stale copy is kept or a sweep failed, the next sweep comes after this long (default 10 min). */
  readonly resweepMs?: number;
}

/**
 * Removes the copies of earlier pull-Secret names (after a rename in the configuration) from
 * every namespace. Level-based: a sweep lists the Secrets carrying our label and removes those of
 * our copies whose name is not the one in force ({@link planRenamedCopyRemoval}), so it needs no
 * memory of earlier names and works the same after a restart. Sweeps run at start, on every
 * change of the name, and again after `resweepMs` while a copy was kept for a live Pod or a sweep
 * failed; one at a time, triggers during a sweep coalesced into one more.
 */
export class RenamedCopySweeper {
  private readonly resweepMs: number;
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private lastName: string | undefined;

  constructor(private readonly o: RenamedCopySweeperOptions) {
    this.resweepMs = o.resweepMs ?? 600_000;
  }

  /**
   * Sweeps when the name in force is not the one last swept for (the first configuration, a
   * rename); a repeated configuration with the same name costs nothing.
   */
  follow(): void {
    const name = this.o.currentName();
    if (name === undefined || name === this.lastName) return;
    this.lastName = name;
    this.trigger();
  }

  /** Asks for a sweep now (coalesced with one in progress). */
  trigger(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
  }

  /** Stops: no new sweep starts; waits for the one in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private async loop(): Promise<void> {
    let outcome: SweepOutcome;
    for (;;) {
      this.again = false;
      try {
        outcome = await this.sweep();
      } catch (error) {
        this.o.logger.warn(
          { err: error },
          'cannot list the copies of earlier pull-Secret names; retrying later',
        );
        outcome = { removed: 0, kept: 0, failed: 1, forbidden: false };
      }
      // A trigger that came during the sweep (this.again is set from outside meanwhile).
      if (!this.sweepAgain()) break;
    }
    if (!this.stopped && !outcome.forbidden && (outcome.kept > 0 || outcome.failed > 0)) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.trigger();
      }, this.resweepMs);
      this.timer.unref();
    }
  }

  private sweepAgain(): boolean {
    return this.again && !this.stopped;
  }

  /** One sweep for the name in force (nothing without one). */
  async sweep(): Promise<SweepOutcome> {
    const current = this.o.currentName();
    if (current === undefined) return { removed: 0, kept: 0, failed: 0, forbidden: false };
    let secrets: V1ObjectMeta[];
    try {
      secrets = await this.o.calls.listManagedSecrets();
    } catch (error) {
      if (statusCodeOf(error) !== 403) throw error;
      // The rendered least-privilege RBAC: expected, so not a warning (said at start and per rename).
      this.o.logger.info(
        { err: error },
        'copies of earlier pull-Secret names cannot be looked for: listing Secrets by label is not granted (docs/upstream-differences.md, 17)',
      );
      return { removed: 0, kept: 0, failed: 0, forbidden: true };
    }
    const stale = renamedCopies(secrets, current);
    if (stale.length === 0) return { removed: 0, kept: 0, failed: 0, forbidden: false };
    let failed = 0;
    const podsByNamespace = new Map<string, V1Pod[]>();
    const readable: SecretId[] = [];
    for (const namespace of new Set(stale.map((s) => s.namespace))) {
      try {
        podsByNamespace.set(namespace, await this.o.calls.listLivePods(namespace));
        readable.push(...stale.filter((s) => s.namespace === namespace));
      } catch (error) {
        // Without its Pods, nothing in that namespace is removed this time.
        failed++;
        this.o.logger.warn({ namespace, err: error }, 'cannot read the Pods before removing a renamed copy');
      }
    }
    const plan = planRenamedCopyRemoval({ stale: readable, podsByNamespace });
    let removed = 0;
    for (const copy of plan.remove) {
      try {
        await this.o.calls.deleteSecret(copy);
        removed++;
        this.o.metrics.pullSecretCopies.inc({ result: 'removed' });
        this.o.logger.info(
          { namespace: copy.namespace, secret: copy.name },
          'copy of an earlier pull-Secret name removed',
        );
      } catch (error) {
        const code = statusCodeOf(error);
        // Gone already (another replica), or made again since the list (its uid differs): not ours to remove.
        if (code === 404 || code === 409) continue;
        failed++;
        this.o.logger.warn(
          { namespace: copy.namespace, secret: copy.name, err: error },
          'cannot remove a renamed copy',
        );
      }
    }
    for (const copy of plan.kept)
      this.o.logger.info(
        { namespace: copy.namespace, secret: copy.name, pods: copy.pods },
        'copy of an earlier pull-Secret name kept: live Pods still name it',
      );
    return { removed, kept: plan.kept.length, failed, forbidden: false };
  }
}
