/**
 * What the per-runtime states share (./state-machine.ts, ./serving-cert-state.ts,
 * ./observe-state.ts): the I/O they may do, the inputs they read, what they found and hand on to
 * the next state, how a pass ends, and the shape of a state.
 */
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AttestedObject } from '../../api/attestation.js';
import type { Condition, ConditionType, RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import type { WebhookStatusReport } from '../../api/webhook-status.js';
import type { LeaseFence } from '../../kube/lease-fence.js';
import type { TrustBundleApi } from '../../kube/trust-bundle-api.js';
import type { SecretWrite } from '../../serving-cert/serving-secret-plan.js';
import type { AdmissionPolicyApi } from './admission-policy-plan.js';
import type { BootstrapperIdentity } from './bootstrapper-index.js';
import type { ForeignWrite } from './foreign-writers.js';
import type { PreflightCandidate } from './preflight-candidate.js';
import type { RolloutChoice } from './rollout-chooser.js';
import type { DeploymentReadiness } from './runtime-installer.js';
import { RuntimeUnreachableError } from './runtime-unreachable.js';
import type { DriftSettings, planWebhook, WebhookRelease } from './runtime-manifests.js';
import type { RegistrationAnswers, ServingSettings, ServingView } from './serving-certificate.js';
import type { StatusBuilder } from './status-builder.js';
import type { SyncSetResult } from './sync-set.js';
import type { WrittenRecord } from './set-writes.js';

/** The I/O a state may do; the reconciler implements it over the KCP and the runtime. */
export interface BootstrapperOps {
  addFinalizer(): Promise<void>;
  releaseFinalizer(): Promise<void>;
  /** Makes the runtime's client (no request); throws when its kubeconfig is missing or unusable. */
  connect(): void;
  /** Whether the runtime's API server answered any request of this pass. */
  answered(): boolean;
  /** The drift channel's settings with this runtime's client certificate; undefined when the channel is off. */
  drift(): Promise<DriftSettings | undefined>;
  /**
   * Writes the objects in order; a ClusterTrustBundle at the version the runtime serves. With
   * `set`, they are that set's writes, and once all are stored the runtime holds it (./set-writes.ts).
   */
  apply(objects: readonly KubernetesObject[], set?: string): Promise<void>;
  /**
   * Applies our webhook configurations; resolves with them as the runtime answered the applies
   * (a configuration not among `objects`, or not answered, is absent).
   */
  register(objects: readonly KubernetesObject[]): Promise<RegistrationAnswers>;
  /**
   * What this process's passes wrote of the set to the runtime (./set-writes.ts); absent or
   * undefined when nothing is known, and a pass then writes the whole set.
   */
  written?(): WrittenRecord | undefined;
  /** The ClusterTrustBundle API the runtime serves (remembered per runtime client). */
  trustBundleApi(): Promise<TrustBundleApi>;
  /** The MutatingAdmissionPolicy API the runtime serves (discovered on each call). */
  admissionPolicyApi(): Promise<AdmissionPolicyApi>;
  deploymentReadiness(): Promise<DeploymentReadiness>;
  /**
   * Follows the webhook Deployment's rollout from what `readiness` read: its next move wakes this
   * runtime's next pass. False (or absent) where nothing follows it: the pass polls.
   */
  followRollout?(readiness: DeploymentReadiness): boolean;
  uninstall(plan: ReturnType<typeof planWebhook>): Promise<void>;
  /** Writes by another field manager (KIM) to these objects after our own last write. */
  foreignWrites(objects: readonly KubernetesObject[]): Promise<ForeignWrite[]>;
  /** The serving Secret and our webhook configurations on the runtime. */
  readServing(): Promise<ServingView>;
  /** Whether a Pod behind the webhook Service that we did not start may still serve (a takeover). */
  readForeignServers(): Promise<boolean>;
  /**
   * Carries out a Secret step of the protocol (issuing with the KCP's CA) and writes the Secret,
   * created, or replaced only if it is still `current` (409 otherwise); resolves with the Secret
   * as the runtime answered the write.
   */
  writeServingSecret(current: V1Secret | undefined, write: SecretWrite): Promise<V1Secret>;
  /**
   * Sets every entry's caBundle of the configurations in `view` (as read) to `bundlePem`; resolves
   * with `view` as the runtime answered the writes.
   */
  writeCaBundle(view: ServingView, bundlePem: string): Promise<ServingView>;
  /** The webhook's status report on the runtime (what set it loaded or refused). */
  readWebhookReport(): Promise<WebhookStatusReport>;
  /**
   * The managed objects this pass applied or read (serving Secret, webhook configurations), each
   * at the resourceVersion the runtime answered with, in order: the record attestations are
   * compared with (./attestation-book.ts).
   */
  observed(): readonly AttestedObject[];
  /** The call that broke a bound of calls to the runtime in this pass (the later ones failed at once). */
  refusal(): RuntimeUnreachableError | undefined;
  /** Puts the preflight Secret of `candidate` on the runtime, or removes it (undefined). */
  writePreflight(candidate: PreflightCandidate | undefined): Promise<void>;
}

/** Everything the states read: the inputs of one pass (the states change only `status`). */
export interface StateContext {
  readonly rb: RuntimeBootstrapper;
  readonly set: SyncSetResult;
  readonly release: WebhookRelease;
  /** Register this URL instead of the in-cluster Service (tests). */
  readonly registrationUrl: string | undefined;
  /** Re-apply even what the status says is current (periodic resync, drift repair). */
  readonly forceResync: boolean;
  /** Who else claims this CR's runtime ID and kubeconfig Secret (none when undefined). */
  readonly identity: BootstrapperIdentity | undefined;
  readonly ops: BootstrapperOps;
  readonly status: StatusBuilder;
  readonly serving: ServingSettings;
  /**
   * Until when (epoch ms) the serving certificate is known to need nothing, from an earlier pass of
   * this process; a pass that changes nothing else then does not read it again.
   */
  readonly servingCurrentUntil: number | undefined;
  /** How often a Ready runtime whose trust-bundle rotation is under way is looked at. */
  readonly trustPollMs: number;
  /** How often the report of a runtime the rollout watches is read. */
  readonly workloadWatchMs: number;
  /** What the rollout gives this runtime (its wave, how often it is watched, a preflight); none: no rollout. */
  readonly rollout: RolloutChoice | undefined;
  /** When (epoch ms) an earlier pass of this process last read the runtime's workloads; none yet: due. */
  readonly workloadsLookedAt: number | undefined;
  /** Whether this replica still holds the runtime: once it does not, the last state looks at nothing. */
  readonly fence: LeaseFence;
  readonly log: Logger;
}

/** What the states of one pass found so far: each state hands it on, changed or not, to the next. */
export interface Found {
  /** The webhook's objects were (re)applied, so its registration is refreshed too. */
  readonly wrote: boolean;
  /** Protocol steps written in this pass (bounded: the protocol converges in a few). */
  readonly servingWrites: number;
  /** Reconcile again after this long at the latest, however the machine ends (the protocol's next deadline). */
  readonly wakeAfterMs: number | undefined;
  /** The serving state found nothing due: until when that holds (epoch ms). */
  readonly servingCheckedUntil: number | undefined;
  /**
   * What the serving state's last write left on the runtime, as the write's answer says: the next
   * plan starts from it instead of reading again (taken once; a 409 drops it).
   */
  readonly servingAnswered: ServingView | undefined;
  /**
   * The serving objects as the serving state last knew them when it found nothing due (read, or
   * answered by its writes): the registration's answers complete it for the next serving look.
   */
  readonly servingView: ServingView | undefined;
  /** This pass read the webhook Deployment (the trust-restart count came with it). */
  readonly trustRead: boolean;
}

/** What a pass starts from: nothing found yet. */
export const NOTHING_FOUND: Found = {
  wrote: false,
  servingWrites: 0,
  wakeAfterMs: undefined,
  servingCheckedUntil: undefined,
  servingAnswered: undefined,
  servingView: undefined,
  trustRead: false,
};

/** How a reconcile ends. */
export interface Outcome {
  /** Run again after this long (a rollout to wait for, or the periodic resync). */
  readonly requeueAfterMs?: number;
  /** A failure: the queue retries with per-key backoff. */
  readonly error?: Error;
}

/** What a pass leaves: how it ended, and what of it is kept for the runtime's next pass. */
export interface PassResult {
  readonly outcome: Outcome;
  /** Until when (epoch ms) the serving certificate was found current; undefined: not in this pass. */
  readonly servingCheckedUntil: number | undefined;
  /** When (epoch ms) this pass read the runtime's workloads; undefined: it did not. */
  readonly workloadsLookedAt: number | undefined;
}

/** The next state with what the states found so far. */
export interface Transition {
  readonly next: StateFn;
  readonly found: Found;
}

/**
 * What a state returns: the next state (nothing new found), the next state with what it found, or
 * the outcome of the machine's work, which the last state (./observe-state.ts) completes.
 */
export type Step = StateFn | Transition | Outcome;

/** A state: does its part and returns the next step. */
export type StateFn = (ctx: StateContext, found: Found) => Promise<Step>;

/** Goes on to `next` with `found`. */
export const goTo = (next: StateFn, found: Found): Transition => ({ next, found });

/**
 * Ends a pass on a failed call: the state's own condition says what failed, unless the runtime did
 * not answer at all (or not usably: too slow, too much), which only `RuntimeReachable` says, with
 * the reason (the rest of the status stays as it was).
 */
export function failed(
  ctx: StateContext,
  error: unknown,
  type: ConditionType,
  status: Condition['status'],
  reason: string,
  message = firstLine(error),
): Outcome {
  ctx.status.state('Error');
  if (error instanceof RuntimeUnreachableError)
    ctx.status.condition('RuntimeReachable', 'False', error.reason, firstLine(error));
  else ctx.status.condition(type, status, reason, message);
  return { error: errorOf(error) };
}

/** The error as an Error. */
export const errorOf = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));
/** The first line of an error's message, bounded (for conditions). */
export const firstLine = (e: unknown): string => (errorOf(e).message.split('\n')[0] ?? '').slice(0, 500);
