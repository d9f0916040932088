/**
 * People's decisions on a rollout, as the planner takes them (pure): the RolloutDecisions of a
 * policy, read as a level. Approvals and rejections name the target they were made for, so a
 * decision never acts on another revision; of pauses and resumes the newest one counts.
 */
import type { RolloutDecisionResource } from '../../api/rollout-decision.js';

/** Who decided, when (the API server's creation time, epoch ms) and in which RolloutDecision. */
export interface Decider {
  readonly by: string;
  readonly at: number;
  readonly name: string;
}

/** What the decisions of a policy say about a target. */
export interface Decisions {
  /** The rollout is paused: no wave starts. */
  readonly paused?: Decider;
  /** The target is rejected (no resume came after the rejection). */
  readonly rejected?: Decider & { readonly reason?: string };
  /** Approvals of the target's waves, oldest first. */
  readonly approvals: readonly (Decider & { readonly wave: string })[];
  /** The newest resume: a name not acted on yet resumes a halted rollout (once). */
  readonly resume?: string;
}

/** No decision at all. */
export const NO_DECISIONS: Decisions = { approvals: [] };

const createdAt = (d: RolloutDecisionResource): number => {
  const t = Date.parse(String(d.metadata.creationTimestamp ?? ''));
  return Number.isNaN(t) ? 0 : t;
};

/**
 * The decisions on policy `policy` about target `target`. Ordered by the API server's creation
 * time, then by name (the CLI's names carry the milliseconds): a resume after a pause ends it, a
 * resume after a rejection lifts it.
 */
export function decisionsOf(
  all: readonly RolloutDecisionResource[],
  policy: string,
  target: string,
): Decisions {
  const ours = all
    .filter((d) => d.spec.policy === policy)
    .map((d) => ({ d, at: createdAt(d) }))
    .sort((a, b) => a.at - b.at || a.d.metadata.name.localeCompare(b.d.metadata.name));
  const who = ({ d, at }: { d: RolloutDecisionResource; at: number }): Decider => ({
    by: d.spec.user,
    at,
    name: d.metadata.name,
  });
  let paused: Decider | undefined;
  let rejected: (Decider & { reason?: string }) | undefined;
  let resume: string | undefined;
  const approvals: (Decider & { wave: string })[] = [];
  for (const x of ours) {
    const s = x.d.spec;
    if (s.action === 'Pause') paused = who(x);
    if (s.action === 'Resume') {
      paused = undefined;
      rejected = undefined;
      resume = x.d.metadata.name;
    }
    if (s.target !== target) continue;
    if (s.action === 'Reject') rejected = { ...who(x), ...(s.reason ? { reason: s.reason } : {}) };
    if (s.action === 'Approve' && s.wave !== undefined) approvals.push({ ...who(x), wave: s.wave });
  }
  return {
    approvals,
    ...(paused ? { paused } : {}),
    ...(rejected ? { rejected } : {}),
    ...(resume !== undefined ? { resume } : {}),
  };
}

/**
 * The resume token the planner compares with the one it acted on last: the policy's resume
 * annotation and the newest resume decision. The annotation alone when no resume was decided, so
 * a state stored before decisions existed does not read as a new resume.
 */
export function resumeTokenOf(
  annotation: string | undefined,
  decided: string | undefined,
): string | undefined {
  return decided === undefined ? annotation : `${annotation ?? ''}|decision/${decided}`;
}
