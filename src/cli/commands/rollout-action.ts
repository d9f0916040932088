import { randomBytes } from 'node:crypto';
import {
  newRolloutDecision,
  rolloutDecisionPath,
  type RolloutDecisionAction,
  type RolloutDecisionResource,
} from '../../api/rollout-decision.js';
import { rolloutPolicyPath, type RolloutPolicyResource } from '../../api/rollout-policy.js';
import { loadClusterAccess, type ClusterAccess } from '../../kube/cluster-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';

/** `rtb rollout`'s sub-commands. */
export type RolloutCommand = 'approve' | 'reject' | 'pause' | 'resume';

/**
 * The flags of `rtb rollout …`. Here with the code that reads them: ./rollout.ts imports the type
 * only, so registering the command loads nothing of this file.
 */
export interface RolloutFlags {
  kubeconfig?: string;
  reason?: string;
  /** approve: the wave approved (default: the one that waits). */
  wave?: string;
}

/** The decision asked for does not fit where the rollout stands (nothing was written). */
export class RolloutCommandError extends Error {
  override readonly name = 'RolloutCommandError';
}

const ACTION: Readonly<Record<RolloutCommand, RolloutDecisionAction>> = {
  approve: 'Approve',
  reject: 'Reject',
  pause: 'Pause',
  resume: 'Resume',
};

/**
 * Writes the decision on policy `policyName` as a RolloutDecision; returns one line saying what
 * was decided. `access` replaces the kubeconfig (tests). The decision names the user the API server
 * says the caller is (a SelfSubjectReview): the admission policy refuses any other name.
 */
export async function runRollout(
  command: RolloutCommand,
  policyName: string,
  flags: RolloutFlags,
  access?: ClusterAccess,
): Promise<string> {
  const kcp = access ?? (await loadClusterAccess(flags.kubeconfig));
  let policy: RolloutPolicyResource;
  try {
    policy = await kubeRequest<RolloutPolicyResource>(kcp, {
      method: 'GET',
      path: rolloutPolicyPath(policyName),
    });
  } catch (error) {
    if (statusCodeOf(error) === 404)
      throw new RolloutCommandError(`no RolloutPolicy ${policyName} on the KCP`, { cause: error });
    throw error;
  }
  const s = policy.status;
  const under = s?.target !== undefined && s.phase !== 'Complete' && s.phase !== 'Halted';
  let wave: string | undefined;
  if (command === 'approve') {
    const waiting = s?.awaiting?.approval === true ? s.awaiting.wave : undefined;
    wave = flags.wave ?? waiting;
    if (!under || wave === undefined)
      throw new RolloutCommandError(
        `the rollout of ${policyName} waits for no approval (phase ${s?.phase ?? 'none'}); name a wave of the rollout under way with --wave to approve it ahead`,
      );
  }
  if (command === 'reject' && !under)
    throw new RolloutCommandError(
      `the rollout of ${policyName} has no target under way to reject (phase ${s?.phase ?? 'none'})`,
    );
  const user = await whoAmI(kcp);
  const action = ACTION[command];
  const decision = newRolloutDecision(
    decisionName(policyName, command),
    {
      policy: policyName,
      action,
      user,
      ...(command === 'approve' || command === 'reject' ? { target: s?.target } : {}),
      ...(wave !== undefined ? { wave } : {}),
      ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
    },
    policy.metadata.uid,
  );
  const created = await kubeRequest<RolloutDecisionResource>(kcp, {
    method: 'POST',
    path: rolloutDecisionPath(),
    body: decision,
  });
  const what =
    command === 'approve'
      ? `approved wave ${wave ?? ''} of ${s?.target ?? ''}`
      : command === 'reject'
        ? `rejected ${s?.target ?? ''}`
        : command === 'pause'
          ? 'paused'
          : 'resumed';
  return `rollout ${policyName}: ${what} as ${user} (RolloutDecision ${created.metadata.name})`;
}

/** The user the API server authenticates this client as (a SelfSubjectReview, as `kubectl auth whoami`). */
async function whoAmI(kcp: ClusterAccess): Promise<string> {
  const review = await kubeRequest<{ status?: { userInfo?: { username?: unknown } } } | undefined>(kcp, {
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  const name = review?.status?.userInfo?.username;
  if (typeof name !== 'string' || name.length === 0)
    throw new RolloutCommandError('the KCP names no user for this kubeconfig (SelfSubjectReview)');
  return name;
}

/**
 * A decision's name: the policy's, the milliseconds (decisions the API server stored in the same
 * second are ordered by name), the command, and a few random characters against a clash.
 */
function decisionName(policy: string, command: RolloutCommand): string {
  const stamp = Date.now().toString().padStart(15, '0');
  return `${policy.slice(0, 200)}.${stamp}.${command}.${randomBytes(3).toString('hex')}`;
}
