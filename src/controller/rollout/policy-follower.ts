import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import { rolloutDecisionPath, type RolloutDecisionResource } from '../../api/rollout-decision.js';
import {
  rolloutPolicyPath,
  type RolloutPolicyResource,
  type RolloutPolicyStatus,
} from '../../api/rollout-policy.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { LatchWaitAbortedError } from '../../kube/latch.js';
import { replacingPatch } from '../../kube/merge-patch.js';
import { createListerWatcher } from '../../kube/list-watch.js';
import { optionalCollection } from '../../kube/optional-collection.js';
import { Reflector } from '../../kube/reflector.js';
import { stripManagedFields } from '../../kube/reflector-options.js';

/** What a {@link PolicyFollower} watches and whom it tells. */
export interface PolicyFollowerOptions {
  readonly kcp: ClusterAccess;
  /** The RolloutPolicy's name (cluster-scoped). */
  readonly name: string;
  readonly logger: Logger;
  /**
   * Called on every change of the policy (created, changed: spec, annotation, status; deleted) and
   * of any RolloutDecision.
   */
  readonly onChange: () => void;
}

/**
 * The RolloutPolicy the controller follows, watched (a reflector on that one name; no CRD reads
 * as no policy), the RolloutDecisions (people's approvals, rejections, pauses and resumes; no CRD
 * reads as none), and the compare-and-swap write of the policy's status.
 */
export class PolicyFollower {
  private readonly reflector: Reflector<RolloutPolicyResource>;
  private readonly decisionReflector: Reflector<RolloutDecisionResource>;
  /**
   * Our status writes the watch has not brought yet: the resourceVersions they replaced, and the
   * policy the last one made. Without them a pass right after a write would plan from the state
   * before it.
   */
  private readonly superseded = new Set<string>();
  private written: RolloutPolicyResource | undefined;

  constructor(private readonly o: PolicyFollowerOptions) {
    const changed = (): void => {
      o.onChange();
    };
    this.reflector = new Reflector<RolloutPolicyResource>({
      name: `rolloutpolicy ${o.name}`,
      listerWatcher: optionalCollection(
        createListerWatcher<RolloutPolicyResource>(o.kcp, rolloutPolicyPath()),
      ),
      fieldSelector: `metadata.name=${o.name}`,
      transform: stripManagedFields,
      logger: o.logger,
      handlers: {
        onAdd: changed,
        // Our own status write coming back asks for nothing: the pass that wrote it knew it.
        onUpdate: (_old, p) => {
          if (p.metadata.resourceVersion !== this.written?.metadata.resourceVersion) changed();
        },
        onDelete: changed,
      },
    });
    // Few and small (a person's word each): all of them, the pass picks its policy's.
    this.decisionReflector = new Reflector<RolloutDecisionResource>({
      name: 'rolloutdecisions',
      listerWatcher: optionalCollection(
        createListerWatcher<RolloutDecisionResource>(o.kcp, rolloutDecisionPath()),
      ),
      transform: stripManagedFields,
      logger: o.logger,
      handlers: { onAdd: changed, onUpdate: changed, onDelete: changed },
    });
  }

  /**
   * Starts watching; resolves once the policy (or its absence) is known, or after `waitMs` (then
   * {@link synced} tells, and the policy's appearance is a change like any other).
   */
  async start(waitMs: number): Promise<void> {
    this.reflector.start();
    this.decisionReflector.start();
    try {
      const signal = AbortSignal.timeout(waitMs);
      await this.reflector.waitForSync(signal);
      await this.decisionReflector.waitForSync(signal);
    } catch (error) {
      if (!(error instanceof LatchWaitAbortedError)) throw error;
      this.o.logger.warn({ waitMs }, 'the RolloutPolicy is not listed yet; nothing is written until it is');
    }
  }

  /** Whether the policy (or its absence) is known. */
  synced(): boolean {
    return this.reflector.hasSynced() && this.decisionReflector.hasSynced();
  }

  async stop(): Promise<void> {
    await this.reflector.stop();
    await this.decisionReflector.stop();
  }

  /** Every RolloutDecision as last seen. */
  decisions(): RolloutDecisionResource[] {
    return this.decisionReflector.store.list();
  }

  /** The policy as last seen (undefined: there is none), our own latest status write included. */
  current(): RolloutPolicyResource | undefined {
    const cached = this.reflector.store.get(this.o.name);
    const rv = cached?.metadata.resourceVersion;
    if (this.written !== undefined && rv !== undefined && this.superseded.has(rv)) return this.written;
    // The watch has caught up (or the policy is gone).
    this.superseded.clear();
    this.written = undefined;
    return cached;
  }

  /**
   * Writes `status` if it differs from `resource`'s, only at the resourceVersion read; false when
   * another writer changed the policy first (its change comes on the watch and asks for a pass).
   */
  async writeStatus(resource: RolloutPolicyResource, status: RolloutPolicyStatus): Promise<boolean> {
    // By content: the API server returns keys in its own order.
    if (isDeepStrictEqual(JSON.parse(JSON.stringify(status)), resource.status ?? {})) return true;
    try {
      const updated = await kubeRequest<RolloutPolicyResource>(this.o.kcp, {
        method: 'PATCH',
        path: `${rolloutPolicyPath(resource.metadata.name)}/status`,
        // A merge patch replaces the status whole (fields gone stay gone), only at the version read.
        body: {
          metadata: { resourceVersion: resource.metadata.resourceVersion },
          status: replacingPatch(resource.status, status),
        },
        timeoutMs: 10_000,
      });
      const over = resource.metadata.resourceVersion;
      if (over !== undefined) this.superseded.add(over);
      this.written = stripManagedFields(updated);
      return true;
    } catch (error) {
      if (statusCodeOf(error) === 409) return false;
      throw error;
    }
  }
}
