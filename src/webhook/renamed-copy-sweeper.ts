import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { COPIED_FROM_ANNOTATION, MANAGED_BY_LABEL } from '../api/managed-labels.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { statusCodeOf } from '../kube/kube-errors.js';
import { kubeRequest } from '../kube/kube-request.js';
import { MAX_PAGE_ITEMS } from '../kube/list-budget.js';
import { KubeListWatch } from '../kube/list-watch.js';
import { listAll } from '../kube/pager.js';
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

/** A Secret name is at most this long: a reference to a longer one names none of our copies. */
const MAX_NAME = 253;

/**
 * A Pod as far as the plan reads it (./renamed-copies.ts): the list's transform, page by page, so
 * a namespace of Pods with large annotations or specs costs their names alone.
 */
function podRefs(p: V1Pod): V1Pod {
  const refs = (p.spec?.imagePullSecrets ?? []).filter(
    (r) => r.name !== undefined && r.name.length <= MAX_NAME,
  );
  const phase = p.status?.phase;
  return {
    metadata: { name: p.metadata?.name, namespace: p.metadata?.namespace },
    spec: { containers: [], imagePullSecrets: refs.map((r) => ({ name: r.name })) },
    status: phase === undefined ? undefined : { phase },
  };
}

/**
 * The metadata a sweep reads of one of our Secrets (./renamed-copies.ts `isOurCopy`): our label
 * and the copied-from annotation (a namespace and a name: longer is not ours), nothing else.
 */
function secretMeta(s: { metadata?: V1ObjectMeta }): { metadata?: V1ObjectMeta } {
  const m = s.metadata ?? {};
  const label = m.labels?.[MANAGED_BY_LABEL];
  const from = m.annotations?.[COPIED_FROM_ANNOTATION];
  return {
    metadata: {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      labels: label === undefined ? undefined : { [MANAGED_BY_LABEL]: label },
      annotations:
        from === undefined || from.length > 2 * MAX_NAME + 1 ? undefined : { [COPIED_FROM_ANNOTATION]: from },
    },
  };
}

/**
 * {@link RenamedCopyCalls} as raw requests through `access`: lists paged by bytes
 * (../kube/pager.ts), our Secrets metadata only, so no Secret data ever reaches this process.
 */
export function renamedCopyCalls(access: ClusterAccess): RenamedCopyCalls {
  const never = new AbortController().signal;
  return {
    listManagedSecrets: async () =>
      (
        await listAll(
          new KubeListWatch<{ metadata?: V1ObjectMeta }>(access, '/api/v1/secrets', { metadataOnly: true }),
          { pageSize: MAX_PAGE_ITEMS, labelSelector: MANAGED_SECRETS_SELECTOR, transform: secretMeta },
          never,
        )
      ).items.map((s) => s.metadata ?? {}),
    listLivePods: async (namespace) =>
      (
        await listAll(
          new KubeListWatch<V1Pod>(access, `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`),
          {
            pageSize: MAX_PAGE_ITEMS,
            fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed',
            transform: podRefs,
          },
          never,
        )
      ).items,
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
