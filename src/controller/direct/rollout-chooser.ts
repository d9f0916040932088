import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import type { PreflightCandidate } from './preflight-candidate.js';
import type { WebhookRelease } from './runtime-manifests.js';
import type { SyncSetResult } from './sync-set.js';

/** What a rollout gives one runtime: its set and release now, and its wave. */
export interface RolloutChoice {
  readonly set: SyncSetResult;
  readonly release: WebhookRelease;
  readonly wave: string;
  /**
   * Its webhook's report must be read often now (its wave is under way at the target, or it checks
   * a preflight): a failure of the Pods must be seen within the soak.
   */
  readonly watch?: boolean;
  /** The candidate its webhook must check now (phase Preflight); none: no preflight Secret there. */
  readonly preflight?: PreflightCandidate;
}

/**
 * Which revision a runtime gets (../rollout/rollout-coordinator.ts). Undefined: no rollout
 * policy, so every runtime gets the live set and release, as without rollouts.
 */
export interface RolloutChooser {
  choose(rb: RuntimeBootstrapper): RolloutChoice | undefined;
}
