/**
 * What the per-runtime states share (./state-machine.ts, ./serving-cert-state.ts): the I/O they
 * may do, what they read, how a reconcile ends, and the shape of a state.
 */
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type { AttestedObject } from '../../api/attestation.js';
import type { Condition, ConditionType, RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import type { WebhookStatusReport } from '../../api/webhook-status.js';
import type { TrustBundleApi } from '../../kube/trust-bundle-api.js';
import type { SecretWrite } from '../../serving-cert/serving-secret-plan.js';
import type { BootstrapperIdentity } from './bootstrapper-index.js';
import type { ForeignWrite } from './foreign-writers.js';
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
  deploymentReadiness(): Promise<DeploymentReadiness>;
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
}

/** Everything the states read, and the little they leave for the states after them. */
export interface StateContext {
  readonly rb: RuntimeBootstrapper;
  readonly set: SyncSetResult;
  readonly release: WebhookRelease;
  /** Register this URL instead of the in-cluster Service (tests). */
  readonly registrationUrl?: string;
  /** Re-apply even what the status says is current (periodic resync, drift repair). */
  readonly forceResync: boolean;
  /** Who else claims this CR's runtime ID and kubeconfig Secret (none when undefined). */
  readonly identity?: BootstrapperIdentity;
  readonly ops: BootstrapperOps;
  readonly status: StatusBuilder;
  readonly serving: ServingSettings;
  /** Set when the webhook's objects were (re)applied, so its registration is refreshed too. */
  wrote: boolean;
  /** Protocol steps written in this reconcile (bounded: the protocol converges in a few). */
  servingWrites: number;
  /** Reconcile again after this long at the latest, however the machine ends (the protocol's next deadline). */
  wakeAfterMs: number | undefined;
  /**
   * Until when (epoch ms) the serving certificate is known to need nothing, from an earlier pass of
   * this process; a pass that changes nothing else then does not read it again.
   */
  readonly servingCurrentUntil?: number;
  /** Set by the serving state when it found nothing due: until when that holds (epoch ms). */
  servingCheckedUntil?: number;
  /**
   * What the serving state's last write left on the runtime, as the write's answer says: the next
   * plan starts from it instead of reading again (taken once; a 409 clears it).
   */
  servingAnswered?: ServingView;
  /**
   * The serving objects as the serving state last knew them when it found nothing due (read, or
   * answered by its writes): the registration's answers complete it for the next serving look.
   */
  servingView?: ServingView;
  /** Set once this pass read the webhook Deployment (the trust-restart count came with it). */
  trustRead?: boolean;
  /** How often a Ready runtime whose trust-bundle rotation is under way is looked at (default 30 s). */
  readonly trustPollMs?: number;
}

/** How a reconcile ends. */
export interface Outcome {
  /** Run again after this long (a rollout to wait for, or the periodic resync). */
  readonly requeueAfterMs?: number;
  /** A failure: the queue retries with per-key backoff. */
  readonly error?: Error;
}

/** A state: does its part and returns the next state, or ends with an outcome. */
export type StateFn = (ctx: StateContext) => Promise<StateFn | Outcome>;

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
