import { FORCE_RELEASE_ANNOTATION, RTB_FINALIZER } from '../../api/runtime-bootstrapper.js';
import { planSources, planWebhook } from './runtime-manifests.js';
import type { DeploymentReadiness } from './runtime-installer.js';
import { describeForeignWrites, type ForeignWrite } from './foreign-writers.js';
import { servingCertificateState } from './serving-cert-state.js';
import { afterRegistration, type RegistrationAnswers } from './serving-certificate.js';
import { RuntimeUnreachableError } from './runtime-unreachable.js';
import { setWrites } from './set-writes.js';
import { setBundleOf, trustLookDue, trustSummary } from './trust-restart-status.js';
import {
  recordTrustBundleApi,
  setHasTrustBundle,
  sourcesFor,
  TRUST_API_RECHECK_MS,
  trustBundleApiMissing,
} from './trust-bundle-api-status.js';
import {
  errorOf,
  failed,
  firstLine,
  goTo,
  NOTHING_FOUND,
  type Found,
  type Outcome,
  type PassResult,
  type StateContext,
  type StateFn,
} from './state-context.js';
import { sFnObserve } from './observe-state.js';
import {
  mountsTrustBundle,
  planAdmissionPolicy,
  recordAdmissionPolicy,
  withPolicy,
  withPolicyParams,
  type AdmissionPolicyApi,
  type PolicyPlan,
} from './admission-policy-plan.js';

/** Bound on transitions, so a bug in a state cannot spin forever (a full pass takes about 25). */
const MAX_TRANSITIONS = 40;

/** The last state: completes the outcome of the states' work with what it finds, and ends the pass. */
export type LastStateFn = (ctx: StateContext, found: Found, outcome: Outcome) => Promise<PassResult>;

/**
 * Runs the machine from `start` until a state ends its work, then its last state (by default the
 * looks at what the runtime's webhook reports, ./observe-state.ts; the states' unit tests end
 * without them). A successful end is requeued by the earliest of its own requeue and the
 * protocol's next deadline (`wakeAfterMs`).
 */
export async function runStateMachine(
  start: StateFn,
  ctx: StateContext,
  last: LastStateFn = sFnObserve,
): Promise<PassResult> {
  let state = start;
  let found = NOTHING_FOUND;
  for (let i = 0; i < MAX_TRANSITIONS; i++) {
    const step = await state(ctx, found);
    if (typeof step === 'function') state = step;
    else if ('next' in step) ({ next: state, found } = step);
    else return last(ctx, found, ended(ctx, found, step));
  }
  const error = new Error(`state machine did not settle within ${MAX_TRANSITIONS} transitions`);
  return last(ctx, found, { error });
}

/** The machine's work ended with `outcome`: whether the runtime answered, and when to come back. */
function ended(ctx: StateContext, found: Found, outcome: Outcome): Outcome {
  // No request of its own to find out: any answer in this pass says the runtime is reachable.
  if (ctx.ops.answered() && !(outcome.error instanceof RuntimeUnreachableError))
    ctx.status.condition('RuntimeReachable', 'True', 'Reachable', "the runtime's API server answers");
  const wake = found.wakeAfterMs;
  if (outcome.error || wake === undefined) return outcome;
  return { requeueAfterMs: Math.min(outcome.requeueAfterMs ?? wake, wake) };
}

/** How soon a rollout under way is looked at again where no watch follows it. */
export const ROLLOUT_POLL_MS = 5_000;
/**
 * How soon a rollout a watch follows is looked at again anyway: the watch wakes the pass when the
 * rollout moves, or when it ends within ./rollout-watch.ts's deadline; this is a backstop only.
 */
export const ROLLOUT_WATCHED_MS = 120_000;
/** How soon a pass looks again while a first install's Ready Pods wait to be listed by the Service. */
export const ENDPOINTS_RECHECK_MS = 500;

/** Entry: a runtime ID held by another CR, deletion, finalizer, pause. */
export const sFnInitialize: StateFn = async (ctx) => {
  if (ctx.identity?.heldBy !== undefined) return sFnRuntimeIdHeld;
  noteIdentity(ctx);
  if (ctx.rb.metadata.deletionTimestamp) return sFnDelete;
  if (!(ctx.rb.metadata.finalizers ?? []).includes(RTB_FINALIZER)) await ctx.ops.addFinalizer();
  if (ctx.rb.spec.paused) return sFnPaused;
  return sFnConnect;
};

/**
 * Another, older CR holds this runtime ID: this one is refused service and touches nothing on the
 * runtime, not even when deleted (the runtime's webhook is the holder's); the status names the holder.
 */
export const sFnRuntimeIdHeld: StateFn = async (ctx) => {
  const holder = ctx.identity?.heldBy ?? '';
  if (ctx.rb.metadata.deletionTimestamp) {
    if ((ctx.rb.metadata.finalizers ?? []).includes(RTB_FINALIZER)) await ctx.ops.releaseFinalizer();
    return {};
  }
  ctx.status
    .state('Error')
    .condition(
      'RuntimeID',
      'False',
      'HeldByAnother',
      `runtime ID "${ctx.rb.spec.runtimeID}" is held by RuntimeBootstrapper ${holder}; this one is not served until that one is deleted`,
    );
  return {};
};

/**
 * This CR holds its runtime ID (a refusal recorded before is lifted), and is warned while other
 * CRs name the same kubeconfig Secret (they would manage one cluster twice).
 */
function noteIdentity(ctx: StateContext): void {
  if (ctx.status.get('RuntimeID'))
    ctx.status.condition('RuntimeID', 'True', 'Held', 'no older RuntimeBootstrapper names this runtime ID');
  const others = ctx.identity?.sharesKubeconfigWith ?? [];
  if (others.length > 0)
    ctx.status.condition(
      'KubeconfigExclusive',
      'False',
      'Shared',
      `the kubeconfig Secret is also named by ${others.join(', ')}`,
    );
  else if (ctx.status.get('KubeconfigExclusive'))
    ctx.status.condition('KubeconfigExclusive', 'True', 'Exclusive', 'no other RuntimeBootstrapper names it');
}

/** Paused: no writes to the runtime at all (incident isolation). */
export const sFnPaused: StateFn = (ctx) => {
  ctx.status.state('Paused');
  return Promise.resolve({});
};

/** Makes the runtime's client from its kubeconfig (the first request tells whether it answers). */
export const sFnConnect: StateFn = (ctx) => {
  try {
    ctx.ops.connect();
  } catch (error) {
    ctx.status.state('Error').condition('RuntimeReachable', 'False', 'Unreachable', firstLine(error));
    return Promise.resolve({ error: errorOf(error) });
  }
  return Promise.resolve(sFnCheckSources);
};

/** Refuses an inconsistent source set: nothing is written, the status says why. */
export const sFnCheckSources: StateFn = (ctx) => {
  if (!ctx.set.ok) {
    ctx.status
      .state('Error')
      .condition('ConfigurationSynced', 'False', 'InconsistentSources', ctx.set.reason);
    return Promise.resolve({});
  }
  return Promise.resolve(sFnCheckOwnership);
};

/**
 * What KIM writes on every pass of its own (its manifests' Deployment and registration, and its
 * config copy): reading these few is enough to see it still at work, and keeps a reconcile at
 * three extra reads per runtime instead of one per object.
 */
const OWNERSHIP_SAMPLE: ReadonlySet<string> = new Set([
  'Deployment',
  'MutatingWebhookConfiguration',
  'ConfigMap',
]);

/**
 * Says in the status whether another field manager (KIM after a takeover) wrote our objects
 * since our own last write. Read before this pass writes anything: after our writes, ours would
 * be the latest and hide KIM's. Only a warning: the runtime is served either way, and a failed
 * read leaves the condition as it was.
 */
export const sFnCheckOwnership: StateFn = async (ctx) => {
  if (!ctx.set.ok) return sFnCheckSources;
  // A pass that only brings a new set to an installed runtime writes nothing KIM writes but the
  // ConfigMap, and costs the set's applies alone; every full pass (periodic resync, drift, a
  // resync asked for) and every install or upgrade looks.
  if (installedAtRelease(ctx) && !ctx.forceResync) return sFnSyncConfiguration;
  const plan = planWebhook(ctx.set.set, ctx.release);
  const objects = [...planSources(ctx.set.set), ...plan.webhook, ...plan.registration];
  let writes: ForeignWrite[];
  try {
    writes = await ctx.ops.foreignWrites(objects.filter((o) => OWNERSHIP_SAMPLE.has(o.kind ?? '')));
  } catch {
    return sFnSyncConfiguration;
  }
  ctx.status.condition(
    'ExclusivelyManaged',
    writes.length === 0 ? 'True' : 'False',
    writes.length === 0 ? 'SoleWriter' : 'OtherFieldManager',
    describeForeignWrites(writes),
  );
  return sFnSyncConfiguration;
};

/**
 * Applies the versioned set: trust bundle (at the version the runtime serves, or not at all where
 * it serves none: then looked at again after a while), then pull Secret, then ConfigMap. Only what
 * changed since this process's last write there (./set-writes.ts); forced passes, installs and
 * upgrades write it all.
 */
export const sFnSyncConfiguration: StateFn = async (ctx, found) => {
  if (!ctx.set.ok) return sFnCheckSources;
  const current = ctx.rb.status?.appliedVersion === ctx.set.set.version;
  if (current && !ctx.forceResync && !trustBundleApiMissing(ctx.status)) return sFnInstallWebhook;
  let wakeAfterMs = found.wakeAfterMs;
  try {
    const api = setHasTrustBundle(ctx.set.set) ? await ctx.ops.trustBundleApi() : undefined;
    const policyApi = await ctx.ops.admissionPolicyApi();
    const policy = policyFor(ctx, policyApi);
    await ctx.ops.apply(
      setWrites(withPolicyParams(sourcesFor(planSources(ctx.set.set), api), policy.params), {
        written: ctx.ops.written?.(),
        held: ctx.rb.status?.appliedVersion,
        full: ctx.forceResync || !installedAtRelease(ctx),
      }),
      ctx.set.set.version,
    );
    // A write that met an upgrade found the version anew: the status says what it was written at.
    recordTrustBundleApi(ctx.status, api?.served ? await ctx.ops.trustBundleApi() : api);
    recordAdmissionPolicy(ctx.status, policyApi, policy.refusal);
    if (api?.served === false)
      wakeAfterMs = Math.min(wakeAfterMs ?? TRUST_API_RECHECK_MS, TRUST_API_RECHECK_MS);
  } catch (error) {
    return failed(ctx, error, 'ConfigurationSynced', 'False', 'ApplyFailed');
  }
  ctx.status
    .condition('ConfigurationSynced', 'True', 'Applied', `source set ${ctx.set.set.version} applied`)
    .applied({ appliedVersion: current ? undefined : ctx.set.set.version });
  return goTo(sFnInstallWebhook, { ...found, wakeAfterMs });
};

/** Installs (or upgrades) the webhook's objects; its serving certificate is the next state's. */
export const sFnInstallWebhook: StateFn = async (ctx, found) => {
  if (!ctx.set.ok) return sFnCheckSources;
  if (installedAtRelease(ctx) && !ctx.forceResync) return sFnServingCertificate;
  try {
    const policy = policyFor(ctx, await ctx.ops.admissionPolicyApi());
    await ctx.ops.apply(withPolicy((await planFor(ctx)).webhook, policy.manifests));
  } catch (error) {
    return failed(ctx, error, 'Installed', 'False', 'ApplyFailed');
  }
  ctx.status
    .condition('Installed', 'True', 'Applied', `webhook ${ctx.release.version} installed`)
    .applied({ webhookVersion: ctx.release.version });
  return goTo(sFnServingCertificate, { ...found, wrote: true });
};

/** Waits for the webhook Deployment to be available before registering it. */
export const sFnWaitForWebhook: StateFn = async (ctx, found) => {
  // Registered and nothing (re)applied: the rollout was waited for in an earlier pass.
  if (registered(ctx) && !found.wrote && !ctx.forceResync) return sFnRegister;
  let readiness: DeploymentReadiness;
  try {
    readiness = await ctx.ops.deploymentReadiness();
  } catch (error) {
    return failed(ctx, error, 'WebhookReady', 'Unknown', 'ReadFailed');
  }
  // The restarter's count rides on the same read.
  ctx.status.trustRestart(trustSummary(readiness.trust));
  if (!readiness.ready) {
    ctx.status.state('Installing').condition('WebhookReady', 'False', 'RollingOut', readiness.message);
    // The Service lists new Pods moments after they turn Ready: sooner than minReadySeconds.
    if (readiness.endpointsPending === true) return { requeueAfterMs: ENDPOINTS_RECHECK_MS };
    // Woken by the rollout's next move where a watch follows it, not a poll's next tick; a
    // trust-bundle rotation under way is looked at as often as a Ready runtime's.
    if (ctx.ops.followRollout?.(readiness) !== true) return { requeueAfterMs: ROLLOUT_POLL_MS };
    return { requeueAfterMs: trustLooksDue(ctx) ? ctx.trustPollMs : ROLLOUT_WATCHED_MS };
  }
  return goTo(sFnRegister, { ...found, trustRead: true });
};

/** Registers the webhook configurations once their backend is available. */
export const sFnRegister: StateFn = async (ctx, found) => {
  if (!ctx.set.ok) return sFnCheckSources;
  if (registered(ctx) && !found.wrote && !ctx.forceResync) return sFnReady;
  let answers: RegistrationAnswers;
  try {
    answers = await ctx.ops.register((await planFor(ctx)).registration);
  } catch (error) {
    return failed(ctx, error, 'WebhookReady', 'False', 'RegistrationFailed');
  }
  // A configuration just created has no caBundle yet: the protocol writes it right away, planned
  // from what the applies answered (no read of what this pass just learned).
  return goTo(sFnTrustRegistration, {
    ...found,
    servingAnswered: afterRegistration(found.servingView, answers),
  });
};

/**
 * The webhook is installed, served with a trusted certificate and registered. While a trust-bundle
 * rotation is under way on the runtime, the restarter's count is read (one GET of the webhook
 * Deployment, unless this pass read it already) and looked at again after a while.
 */
export const sFnReady: StateFn = async (ctx, found) => {
  ctx.status
    .state('Ready')
    .condition('WebhookReady', 'True', 'Available', 'the webhook is available and registered');
  const due = (): boolean => trustLooksDue(ctx);
  if (!found.trustRead && due()) {
    try {
      ctx.status.trustRestart(trustSummary((await ctx.ops.deploymentReadiness()).trust));
    } catch {
      // The count stays as it was; the next look reads it again.
    }
  }
  return due() ? { requeueAfterMs: ctx.trustPollMs } : {};
};

/**
 * The serving certificate before the rollout is waited for: a fresh install's Pods become ready
 * only once the Secret holds a certificate, and a takeover starts moving trust to the KCP's CA.
 */
export const sFnServingCertificate: StateFn = servingCertificateState(sFnWaitForWebhook, {
  trustKnown: true,
});
/** The serving certificate once more after the registration was applied: its caBundle. */
export const sFnTrustRegistration: StateFn = servingCertificateState(sFnReady);

/** Whether the restarter's count, as the status now holds it, is to be read again soon. */
function trustLooksDue(ctx: StateContext): boolean {
  const s = ctx.status.build();
  return trustLookDue({
    current: s.trustRestart,
    setBundle: setBundleOf(ctx.set),
    appliedAt: s.appliedAt,
    nowMs: ctx.serving.now(),
  });
}

/**
 * The webhook's objects of this release are installed (as the status says), for this spec: a
 * changed spec (its generation not yet observed, e.g. `repairEscapedPods`) installs again.
 */
function installedAtRelease(ctx: StateContext): boolean {
  const observed = ctx.rb.status?.observedGeneration;
  return (
    ctx.rb.status?.webhookVersion === ctx.release.version &&
    ctx.status.get('Installed')?.status === 'True' &&
    (observed === undefined || observed >= (ctx.rb.metadata.generation ?? 0))
  );
}

/** The webhook configurations were applied once the Deployment was available. */
function registered(ctx: StateContext): boolean {
  return ctx.status.get('WebhookReady')?.status === 'True';
}

/** The webhook's objects for this runtime, with the drift channel's settings. */
async function planFor(ctx: StateContext): Promise<ReturnType<typeof planWebhook>> {
  if (!ctx.set.ok) throw new Error('internal: planned without a consistent source set');
  return planWebhook(ctx.set.set, ctx.release, {
    registrationUrl: ctx.registrationUrl,
    drift: await ctx.ops.drift(),
    repairEscaped: ctx.rb.spec.repairEscapedPods,
  });
}

/** The admission policy's objects for this runtime's set (./admission-policy-plan.ts). */
function policyFor(ctx: StateContext, api: AdmissionPolicyApi): PolicyPlan {
  if (!ctx.set.ok) throw new Error('internal: planned without a consistent source set');
  return planAdmissionPolicy(ctx.set.set, api, mountsTrustBundle(ctx.rb.status?.conditions));
}

/** Deletion: registration first, then everything else, then the finalizer. */
export const sFnDelete: StateFn = async (ctx) => {
  ctx.status.state('Deleting');
  if (!(ctx.rb.metadata.finalizers ?? []).includes(RTB_FINALIZER)) return {};
  if (ctx.rb.metadata.annotations?.[FORCE_RELEASE_ANNOTATION] === 'true') {
    await ctx.ops.releaseFinalizer();
    return {};
  }
  if (ctx.rb.spec.paused) {
    ctx.status.condition('Installed', 'Unknown', 'Paused', 'paused: nothing is removed while paused');
    return {};
  }
  const unreachable = (error: unknown): Outcome => {
    ctx.status.condition(
      'RuntimeReachable',
      'False',
      error instanceof RuntimeUnreachableError ? error.reason : 'Unreachable',
      `${firstLine(error)}; the finalizer stays until the runtime is cleaned up (or annotate ${FORCE_RELEASE_ANNOTATION}: "true")`,
    );
    return { error: errorOf(error) };
  };
  try {
    ctx.ops.connect();
  } catch (error) {
    return unreachable(error);
  }
  try {
    await ctx.ops.uninstall(
      planWebhook(ctx.set.ok ? ctx.set.set : undefined, ctx.release, {
        drift: { listenerUrl: 'https://unused' },
      }),
    );
  } catch (error) {
    if (error instanceof RuntimeUnreachableError) return unreachable(error);
    ctx.status.condition('Installed', 'Unknown', 'RemovalFailed', firstLine(error));
    return { error: errorOf(error) };
  }
  await ctx.ops.releaseFinalizer();
  return {};
};
