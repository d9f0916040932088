/**
 * The escaped-Pod repair (opt-in, DESIGN §13): the owners of escaped Pods are restarted through
 * the trust restarter's paced path (../trust-restart/): its calls (a server-side apply of one
 * annotation on the Pod template, the ReplicaSet's Deployment read), its rollout test and its
 * deadline, one owner at a time, the next only once the last rolled out or passed its deadline.
 * The annotation's value names the set in force, so an owner is restarted at most once per set
 * (a Pod that escapes again while it rolls is counted, not chased). Bare Pods, Pods of other
 * owners, OnDelete workloads and owners that opted out of restarts are reported, never touched:
 * nothing here deletes or evicts.
 */
import type { Logger } from 'pino';
import { ESCAPED_REPAIR_ANNOTATION } from '../../api/escaped-pods.js';
import { RESTART_OPT_OUT_ANNOTATION } from '../../api/trust-stamp.js';
import { abortableSleep } from '../../kube/abortable-sleep.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import type { RestartCalls } from '../trust-restart/restart-calls.js';
import type { WorkloadKind, WorkloadRef } from '../trust-restart/restart-plan.js';
import { rolloutComplete, type WorkloadObject } from '../trust-restart/workload-decision.js';
import type { EscapedOwner } from './escaped-tally.js';

/** What one owner's repair came to. */
export type RepairOutcome =
  | 'restarted'
  /** Its template names this set already: restarted before, its Pods escaped again; left alone. */
  | 'repaired-before'
  /** Not a Deployment (through its ReplicaSet), StatefulSet or DaemonSet. */
  | 'not-rollable'
  | 'opted-out'
  /** OnDelete: a template change restarts nothing. */
  | 'on-delete'
  | 'gone'
  /** No rights to patch it (403). */
  | 'refused';

const ROLLABLE = new Set<string>(['StatefulSet', 'DaemonSet']);

/**
 * The workload that restarts an owner's Pods (pure): a StatefulSet or DaemonSet itself, a
 * ReplicaSet's Deployment as `deploymentOf` reads it; undefined for any other owner.
 */
export async function workloadOfOwner(
  o: EscapedOwner,
  deploymentOf: (namespace: string, rs: EscapedOwner['owner']) => Promise<string | undefined>,
): Promise<WorkloadRef | undefined> {
  const { owner, namespace } = o;
  if (owner.apiVersion !== 'apps/v1') return undefined;
  if (ROLLABLE.has(owner.kind)) return { kind: owner.kind as WorkloadKind, namespace, name: owner.name };
  if (owner.kind !== 'ReplicaSet') return undefined;
  const deployment = await deploymentOf(namespace, owner);
  return deployment === undefined ? undefined : { kind: 'Deployment', namespace, name: deployment };
}

/** What one owner's repair needs before acting (pure): the workload as read just now. */
export function repairAction(
  kind: WorkloadKind,
  w: WorkloadObject,
  token: string,
): 'patch' | 'repaired-before' | 'opted-out' | 'on-delete' {
  const own = w.metadata?.annotations ?? {};
  const template = w.spec?.template?.metadata?.annotations ?? {};
  if (own[RESTART_OPT_OUT_ANNOTATION] === 'false' || template[RESTART_OPT_OUT_ANNOTATION] === 'false')
    return 'opted-out';
  if (template[ESCAPED_REPAIR_ANNOTATION] === token) return 'repaired-before';
  if (kind !== 'Deployment' && w.spec?.updateStrategy?.type === 'OnDelete') return 'on-delete';
  return 'patch';
}

/** Settings of {@link repairOwners}. */
export interface RepairSettings {
  readonly calls: RestartCalls;
  /** The set in force, written on the templates (a new set may restart an owner once more). */
  readonly token: string;
  /** A restart not rolled out after this is reported and the next goes on (the restarter's). */
  readonly deadlineMs: number;
  /** How often a rollout under way is looked at (default 2 s). */
  readonly pollMs?: number;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  /** Told each owner's outcome (metrics). */
  readonly onOutcome: (outcome: RepairOutcome, kind: string) => void;
  /** Whether this replica still leads (checked before each write). */
  readonly isActive: () => boolean;
}

/** Repairs the owners one at a time (see the file comment); resolves when done or stopped. */
export async function repairOwners(owners: readonly EscapedOwner[], s: RepairSettings): Promise<void> {
  const done = new Set<string>();
  for (const o of owners) {
    if (s.signal.aborted || !s.isActive()) return;
    const workload = await workloadOfOwner(o, async (namespace, rs) => {
      const found = await s.calls.replicaSetOwner(namespace, rs);
      return found === undefined || found === null ? undefined : found.deployment;
    });
    if (workload === undefined) {
      s.onOutcome('not-rollable', o.owner.kind);
      s.logger.warn(
        { owner: `${o.owner.kind}/${o.namespace}/${o.owner.name}`, pods: o.pods },
        'escaped Pods of an owner that cannot be rolled; not restarted (recreate them)',
      );
      continue;
    }
    const key = `${workload.kind}/${workload.namespace}/${workload.name}`;
    // Two ReplicaSets of one Deployment (a rollout under way) are one owner.
    if (done.has(key)) continue;
    done.add(key);
    s.onOutcome(await repairOne(workload, key, o.pods, s), workload.kind);
  }
}

async function repairOne(
  w: WorkloadRef,
  key: string,
  pods: number,
  s: RepairSettings,
): Promise<RepairOutcome> {
  const read = await s.calls.readWorkload(w);
  if (read === undefined) return 'gone';
  const action = repairAction(w.kind, read, s.token);
  if (action !== 'patch') {
    s.logger.info({ target: key, pods, action }, 'escaped Pods left alone');
    return action;
  }
  try {
    await s.calls.annotateTemplate(w, s.token, ESCAPED_REPAIR_ANNOTATION);
  } catch (err) {
    if (statusCodeOf(err) !== 403) throw err;
    s.logger.warn({ target: key, pods }, 'not allowed to restart the owner of escaped Pods');
    return 'refused';
  }
  s.logger.info({ target: key, pods }, 'restarting the owner of escaped Pods');
  const started = performance.now();
  while (!s.signal.aborted && performance.now() - started < s.deadlineMs) {
    await abortableSleep(s.pollMs ?? 2_000, s.signal);
    const now = await s.calls.readWorkload(w);
    if (now === undefined || rolloutComplete(w.kind, now)) return 'restarted';
  }
  if (!s.signal.aborted)
    s.logger.warn(
      { target: key },
      'escaped-Pod restart not rolled out by its deadline; going on with the next',
    );
  return 'restarted';
}
