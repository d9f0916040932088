import type { V1ConfigMap, V1Namespace, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { applyConfigMapData } from '../../kube/apply.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { KubeApiError, statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { MAX_PAGE_ITEMS } from '../../kube/list-budget.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import { listAll } from '../../kube/pager.js';
import {
  earlierNames,
  namesStillPending,
  planNamespaceSweep,
  readRememberedNames,
  rememberName,
  REMEMBERED_TEXT_MAX,
  SECRET_NAME_MAX,
  writeRememberedNames,
  type NameAnswer,
} from './renamed-copies.js';

/**
 * The key of the webhook's status ConfigMap that holds the pull-Secret names the copier wrote
 * under, newest first, one a line. The KCP does not read it (../api/webhook-status.ts reads
 * named keys only). A runtime admin can edit it, which gives them nothing they lack: a name
 * added makes the webhook try deletes the API server lets through only for our own copies
 * (../render/webhook-secret-policy.ts), which that admin may delete anyway; a name removed
 * leaves copies they may remove themselves.
 */
export const RENAMED_COPIES_KEY = 'pullSecretNames';

/** The field manager of {@link RENAMED_COPIES_KEY}: the report's other keys are other managers', untouched. */
export const RENAMED_COPIES_FIELD_MANAGER = 'rt-bootstrapper-webhook-renamed-copies';

/** The reads and the deletes the sweeper makes, and where it keeps the names it remembers. */
export interface RenamedCopyCalls {
  /** The names of every namespace (metadata only). */
  readonly listNamespaces: () => Promise<string[]>;
  /** The Pods of a namespace that have not ended. */
  readonly listLivePods: (namespace: string) => Promise<V1Pod[]>;
  /** Deletes the Secret `name` in `namespace` (the API server lets through only our copies). */
  readonly deleteSecret: (namespace: string, name: string) => Promise<unknown>;
  /** The stored record's text (undefined: none); absent when the names are kept in memory only. */
  readonly readRecord?: () => Promise<string | undefined>;
  /** Stores the record's text. */
  readonly writeRecord?: (text: string) => Promise<void>;
}

/**
 * A Pod as far as the plan reads it (./renamed-copies.ts): the list's transform, page by page, so
 * a namespace of Pods with large annotations or specs costs their names alone.
 */
function podRefs(p: V1Pod): V1Pod {
  const refs = (p.spec?.imagePullSecrets ?? []).filter(
    (r) => r.name !== undefined && r.name.length <= SECRET_NAME_MAX,
  );
  const phase = p.status?.phase;
  return {
    metadata: { name: p.metadata?.name, namespace: p.metadata?.namespace },
    spec: { containers: [], imagePullSecrets: refs.map((r) => ({ name: r.name })) },
    status: phase === undefined ? undefined : { phase },
  };
}

/**
 * {@link RenamedCopyCalls} as raw requests through `access`: lists paged by bytes
 * (../kube/pager.ts), namespaces metadata only; the record in `record`'s ConfigMap (read by
 * name, written by server-side apply of its one key), or in memory only without one.
 */
export function renamedCopyCalls(
  access: ClusterAccess,
  record?: { readonly namespace: string; readonly name: string },
): RenamedCopyCalls {
  const never = new AbortController().signal;
  const cmPath =
    record === undefined
      ? ''
      : `/api/v1/namespaces/${encodeURIComponent(record.namespace)}/configmaps/${encodeURIComponent(record.name)}`;
  return {
    listNamespaces: async () =>
      (
        await listAll(
          new KubeListWatch<V1Namespace>(access, '/api/v1/namespaces', { metadataOnly: true }),
          { pageSize: MAX_PAGE_ITEMS, transform: (n) => ({ metadata: { name: n.metadata?.name } }) },
          never,
        )
      ).items.flatMap((n) => (n.metadata?.name === undefined ? [] : [n.metadata.name])),
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
    // Unconditioned (no uid: nothing is read first); the policy refuses any Secret not our copy.
    // The answer (the removed copy, its data) is read to its end and dropped unparsed.
    deleteSecret: (namespace, name) =>
      kubeRequest<unknown>(access, {
        method: 'DELETE',
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
        parseResponse: false,
      }),
    readRecord:
      record === undefined
        ? undefined
        : async () => {
            try {
              const cm = await kubeRequest<V1ConfigMap>(access, { method: 'GET', path: cmPath });
              // Cut before it is split (./renamed-copies.ts readRememberedNames cuts again).
              return cm.data?.[RENAMED_COPIES_KEY]?.slice(0, REMEMBERED_TEXT_MAX + 1);
            } catch (error) {
              if (statusCodeOf(error) === 404) return undefined;
              throw error;
            }
          },
    writeRecord:
      record === undefined
        ? undefined
        : async (text) => {
            await applyConfigMapData(
              access,
              record,
              { [RENAMED_COPIES_KEY]: text },
              { fieldManager: RENAMED_COPIES_FIELD_MANAGER },
            );
          },
  };
}

/** What one sweep did. */
export interface SweepOutcome {
  readonly removed: number;
  /** Earlier names kept in a namespace because live Pods there still name them. */
  readonly kept: number;
  /** Pod reads, deletes or record writes that failed (retried by the next sweep). */
  readonly failed: number;
}

/** What {@link RenamedCopySweeper} needs. */
export interface RenamedCopySweeperOptions {
  readonly calls: RenamedCopyCalls;
  /** The pull-Secret name in force; undefined while no configuration is (nothing is swept then). */
  readonly currentName: () => string | undefined;
  /** The webhook's count of pull-Secret copies by result (a removal counts as `removed`). */
  readonly metrics: { readonly pullSecretCopies: Counter<'result'> };
  readonly logger: Logger;
  /** While a stale copy is kept or a sweep failed, the next sweep comes after this long (default 10 min). */
  readonly resweepMs?: number;
}

/** Whether a refused delete was an admission policy's: the Secret of that name is not our copy. */
function refusedByPolicy(error: unknown): boolean {
  return (
    statusCodeOf(error) === 403 &&
    error instanceof KubeApiError &&
    error.message.includes('ValidatingAdmissionPolicy')
  );
}

/**
 * Removes the copies of earlier pull-Secret names (after a rename in the configuration) from
 * every namespace, with no right to read Secrets: it remembers the names the copier wrote under
 * (the last 8, in memory and in the status ConfigMap, so a restart or
 * the next replica remembers too) and, for each earlier name in each namespace whose live Pods
 * do not name it, deletes the Secret of that name. The API server's policy
 * (../render/webhook-secret-policy.ts) lets the delete through only for our own copy; a tenant's
 * Secret of that name is refused and left. A name with no copy left anywhere is forgotten.
 * Sweeps run at start, on every change of the name, and again after `resweepMs` while a copy was
 * kept for a live Pod or a sweep failed; one at a time, one request at a time, triggers during a
 * sweep coalesced into one more.
 */
export class RenamedCopySweeper {
  private readonly resweepMs: number;
  private running: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private lastName: string | undefined;
  /** The names the copier wrote under, newest first (the one in force among them). */
  private names: string[] = [];
  /** Whether the stored record was read (merged into {@link names}) yet. */
  private loaded = false;
  /** The record's text as last stored or read. */
  private stored: string | undefined;

  constructor(private readonly o: RenamedCopySweeperOptions) {
    this.resweepMs = o.resweepMs ?? 600_000;
  }

  /** The names remembered now, newest first. */
  remembered(): readonly string[] {
    return this.names;
  }

  /**
   * Remembers the name in force and sweeps when it is not the one last seen (the first
   * configuration, a rename); a repeated configuration with the same name costs nothing.
   */
  follow(): void {
    const name = this.o.currentName();
    if (name === undefined || name === this.lastName) return;
    this.lastName = name;
    this.names = rememberName(this.names, name);
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
          'cannot look for copies of earlier pull-Secret names; retrying later',
        );
        outcome = { removed: 0, kept: 0, failed: 1 };
      }
      // A trigger that came during the sweep (this.again is set from outside meanwhile).
      if (!this.sweepAgain()) break;
    }
    if (!this.stopped && (outcome.kept > 0 || outcome.failed > 0)) {
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

  /** Reads the stored record once (merged behind the names seen since start). */
  private async load(): Promise<void> {
    if (this.loaded) return;
    const read = this.o.calls.readRecord;
    const text = read === undefined ? undefined : await read();
    let names = readRememberedNames(text);
    for (const n of [...this.names].reverse()) names = rememberName(names, n);
    this.names = names;
    this.stored = text;
    this.loaded = true;
  }

  /** Stores the names when they differ from the record; false when that failed. */
  private async persist(): Promise<boolean> {
    const text = writeRememberedNames(this.names);
    const write = this.o.calls.writeRecord;
    if (write === undefined || text === this.stored) return true;
    try {
      await write(text);
      this.stored = text;
      return true;
    } catch (error) {
      this.o.logger.warn({ err: error }, 'cannot store the earlier pull-Secret names; retrying later');
      return false;
    }
  }

  /** One sweep for the name in force (nothing without one). */
  async sweep(): Promise<SweepOutcome> {
    const current = this.o.currentName();
    if (current === undefined) return { removed: 0, kept: 0, failed: 0 };
    await this.load();
    this.names = rememberName(this.names, current);
    let failed = (await this.persist()) ? 0 : 1;
    const earlier = earlierNames(this.names, current);
    if (earlier.length === 0) return { removed: 0, kept: 0, failed };
    const answers = new Map<string, NameAnswer[]>(earlier.map((n) => [n, []]));
    const answer = (name: string, a: NameAnswer): void => {
      answers.get(name)?.push(a);
    };
    let removed = 0;
    let kept = 0;
    for (const namespace of await this.o.calls.listNamespaces()) {
      if (this.stopped) return { removed, kept, failed: failed + 1 };
      let pods: V1Pod[];
      try {
        pods = await this.o.calls.listLivePods(namespace);
      } catch (error) {
        // Without its Pods, nothing in that namespace is removed this time.
        failed++;
        for (const n of earlier) answer(n, 'failed');
        this.o.logger.warn({ namespace, err: error }, 'cannot read the Pods before removing a renamed copy');
        continue;
      }
      const plan = planNamespaceSweep({ names: earlier, pods });
      for (const k of plan.kept) {
        kept++;
        answer(k.name, 'kept');
        this.o.logger.info(
          { namespace, secret: k.name, pods: k.pods },
          'copy of an earlier pull-Secret name kept: live Pods still name it',
        );
      }
      for (const name of plan.remove) {
        // Renamed back meanwhile: that name is the copier's again (a new sweep follows).
        if (this.o.currentName() === name) {
          answer(name, 'failed');
          continue;
        }
        try {
          await this.o.calls.deleteSecret(namespace, name);
          removed++;
          answer(name, 'removed');
          this.o.metrics.pullSecretCopies.inc({ result: 'removed' });
          this.o.logger.info({ namespace, secret: name }, 'copy of an earlier pull-Secret name removed');
        } catch (error) {
          if (statusCodeOf(error) === 404) {
            answer(name, 'absent');
          } else if (refusedByPolicy(error)) {
            // Somebody else's Secret of that name (a tenant's own): not ours, left alone.
            answer(name, 'not-ours');
            this.o.logger.debug(
              { namespace, secret: name },
              'a Secret of an earlier pull-Secret name is not our copy: left',
            );
          } else {
            failed++;
            answer(name, 'failed');
            this.o.logger.warn({ namespace, secret: name, err: error }, 'cannot remove a renamed copy');
          }
        }
      }
    }
    const pending = namesStillPending(answers);
    this.names = this.names.filter(
      (n) => !earlier.includes(n) || pending.has(n) || n === this.o.currentName(),
    );
    if (!(await this.persist())) failed++;
    return { removed, kept, failed };
  }
}
