import {
  FORCE_RELEASE_ANNOTATION,
  RTB_FINALIZER,
  type RuntimeBootstrapper,
} from '../../api/runtime-bootstrapper.js';
import {
  planSources,
  planWebhook,
  type DriftSettings,
  type WebhookRelease,
  type WebhookTls,
} from './runtime-manifests.js';
import type { StatusBuilder } from './status-builder.js';
import type { SyncSetResult } from './sync-set.js';
import type { DeploymentReadiness } from './runtime-installer.js';
import type { KubernetesObject } from '@kubernetes/client-node';
import { describeForeignWrites, type ForeignWrite } from './foreign-writers.js';

/** The I/O a state may do; the reconciler implements it over the KCP and the runtime. */
export interface BootstrapperOps {
  addFinalizer(): Promise<void>;
  releaseFinalizer(): Promise<void>;
  /** Resolves once the runtime answers; throws with the reason otherwise. */
  connect(): Promise<void>;
  /** The webhook's TLS material for this runtime (reused while valid, else issued). */
  webhookTls(): Promise<WebhookTls>;
  /** The drift channel's settings with this runtime's client certificate; undefined when the channel is off. */
  drift(): Promise<DriftSettings | undefined>;
  apply(objects: readonly KubernetesObject[]): Promise<void>;
  deploymentReadiness(): Promise<DeploymentReadiness>;
  uninstall(plan: ReturnType<typeof planWebhook>): Promise<void>;
  /** Writes by another field manager (KIM) to these objects after our own last write. */
  foreignWrites(objects: readonly KubernetesObject[]): Promise<ForeignWrite[]>;
}

/** Everything the states read. */
export interface StateContext {
  readonly rb: RuntimeBootstrapper;
  readonly set: SyncSetResult;
  readonly release: WebhookRelease;
  /** Re-apply even what the status says is current (periodic resync, drift repair). */
  readonly forceResync: boolean;
  readonly ops: BootstrapperOps;
  readonly status: StatusBuilder;
  /** Set when the webhook's objects were (re)applied, so its registration is refreshed too. */
  wrote: boolean;
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

/** Runs the machine from `start` until a state ends it. */
export async function runStateMachine(start: StateFn, ctx: StateContext): Promise<Outcome> {
  let step: StateFn | Outcome = start;
  // A bound on transitions keeps a bug in a state from spinning forever.
  for (let i = 0; i < 20; i++) {
    if (typeof step !== 'function') return step;
    step = await step(ctx);
  }
  return { error: new Error('state machine did not settle within 20 transitions') };
}

const ROLLOUT_POLL_MS = 5_000;

const errorOf = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));
const firstLine = (e: unknown): string => (errorOf(e).message.split('\n')[0] ?? '').slice(0, 500);

/** Entry: deletion, finalizer, pause. */
export const sFnInitialize: StateFn = async (ctx) => {
  if (ctx.rb.metadata.deletionTimestamp) return sFnDelete;
  if (!(ctx.rb.metadata.finalizers ?? []).includes(RTB_FINALIZER)) await ctx.ops.addFinalizer();
  if (ctx.rb.spec.paused) return sFnPaused;
  return sFnConnect;
};

/** Paused: no writes to the runtime at all (incident isolation). */
export const sFnPaused: StateFn = (ctx) => {
  ctx.status.state('Paused');
  return Promise.resolve({});
};

/** Reaches the runtime's API server. */
export const sFnConnect: StateFn = async (ctx) => {
  try {
    await ctx.ops.connect();
  } catch (error) {
    ctx.status.state('Error').condition('RuntimeReachable', 'False', 'Unreachable', firstLine(error));
    return { error: errorOf(error) };
  }
  ctx.status.condition('RuntimeReachable', 'True', 'Reachable', "the runtime's API server answers");
  return sFnCheckSources;
};

/** Refuses an inconsistent source set: nothing is written, the status says why. */
export const sFnCheckSources: StateFn = (ctx) => {
  if (!ctx.set.ok) {
    ctx.status
      .state('Error')
      .condition('ConfigurationSynced', 'False', 'InconsistentSources', ctx.set.reason);
    return Promise.resolve({});
  }
  return Promise.resolve(sFnSyncConfiguration);
};

/** Applies the versioned set: trust bundle, then pull Secret, then ConfigMap. */
export const sFnSyncConfiguration: StateFn = async (ctx) => {
  if (!ctx.set.ok) return sFnCheckSources;
  const current = ctx.rb.status?.appliedVersion === ctx.set.set.version;
  if (current && !ctx.forceResync) return sFnInstallWebhook;
  try {
    await ctx.ops.apply(planSources(ctx.set.set));
  } catch (error) {
    ctx.status.state('Error').condition('ConfigurationSynced', 'False', 'ApplyFailed', firstLine(error));
    return { error: errorOf(error) };
  }
  ctx.status
    .condition('ConfigurationSynced', 'True', 'Applied', `source set ${ctx.set.set.version} applied`)
    .applied(current ? {} : { appliedVersion: ctx.set.set.version });
  return sFnInstallWebhook;
};

/** Installs (or upgrades) the webhook's objects. */
export const sFnInstallWebhook: StateFn = async (ctx) => {
  if (!ctx.set.ok) return sFnCheckSources;
  const installed =
    ctx.rb.status?.webhookVersion === ctx.release.version && ctx.status.get('Installed')?.status === 'True';
  if (installed && !ctx.forceResync) return sFnWaitForWebhook;
  try {
    const tls = await ctx.ops.webhookTls();
    await ctx.ops.apply(planWebhook(ctx.set.set, ctx.release, tls, await ctx.ops.drift()).webhook);
  } catch (error) {
    ctx.status.state('Error').condition('Installed', 'False', 'ApplyFailed', firstLine(error));
    return { error: errorOf(error) };
  }
  ctx.wrote = true;
  ctx.status
    .condition('Installed', 'True', 'Applied', `webhook ${ctx.release.version} installed`)
    .applied({ webhookVersion: ctx.release.version });
  return sFnWaitForWebhook;
};

/** Waits for the webhook Deployment to be available before registering it. */
export const sFnWaitForWebhook: StateFn = async (ctx) => {
  let readiness: DeploymentReadiness;
  try {
    readiness = await ctx.ops.deploymentReadiness();
  } catch (error) {
    ctx.status.state('Error').condition('WebhookReady', 'Unknown', 'ReadFailed', firstLine(error));
    return { error: errorOf(error) };
  }
  if (!readiness.ready) {
    ctx.status.state('Installing').condition('WebhookReady', 'False', 'RollingOut', readiness.message);
    return { requeueAfterMs: ROLLOUT_POLL_MS };
  }
  return sFnRegister;
};

/** Registers the MutatingWebhookConfiguration once its backend is available. */
export const sFnRegister: StateFn = async (ctx) => {
  if (!ctx.set.ok) return sFnCheckSources;
  const registered = ctx.status.get('WebhookReady')?.status === 'True';
  if (!registered || ctx.wrote || ctx.forceResync) {
    let plan: ReturnType<typeof planWebhook>;
    try {
      const tls = await ctx.ops.webhookTls();
      plan = planWebhook(ctx.set.set, ctx.release, tls, await ctx.ops.drift());
      await ctx.ops.apply(plan.registration);
    } catch (error) {
      ctx.status.state('Error').condition('WebhookReady', 'False', 'RegistrationFailed', firstLine(error));
      return { error: errorOf(error) };
    }
    await checkExclusive(ctx, [...planSources(ctx.set.set), ...plan.webhook, ...plan.registration]);
  }
  ctx.status
    .state('Ready')
    .condition('WebhookReady', 'True', 'Available', 'the webhook is available and registered');
  return {};
};

/**
 * What KIM writes on every pass of its own (its manifests' Deployment and registration, and its
 * config copy): reading these few is enough to see it still at work, and keeps a full pass at
 * three extra reads per runtime instead of one per object.
 */
const OWNERSHIP_SAMPLE: ReadonlySet<string> = new Set([
  'Deployment',
  'MutatingWebhookConfiguration',
  'ConfigMap',
]);

/**
 * After a full pass: says in the status whether another field manager (KIM after a takeover)
 * still writes our objects. Only a warning: the runtime is served either way, and a failed read
 * leaves the condition as it was.
 */
async function checkExclusive(ctx: StateContext, objects: readonly KubernetesObject[]): Promise<void> {
  let writes: ForeignWrite[];
  try {
    writes = await ctx.ops.foreignWrites(objects.filter((o) => OWNERSHIP_SAMPLE.has(o.kind ?? '')));
  } catch {
    return;
  }
  ctx.status.condition(
    'ExclusivelyManaged',
    writes.length === 0 ? 'True' : 'False',
    writes.length === 0 ? 'SoleWriter' : 'OtherFieldManager',
    describeForeignWrites(writes),
  );
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
  try {
    await ctx.ops.connect();
  } catch (error) {
    ctx.status.condition(
      'RuntimeReachable',
      'False',
      'Unreachable',
      `${firstLine(error)}; the finalizer stays until the runtime is cleaned up (or annotate ${FORCE_RELEASE_ANNOTATION}: "true")`,
    );
    return { error: errorOf(error) };
  }
  try {
    await ctx.ops.uninstall(
      planWebhook(ctx.set.ok ? ctx.set.set : undefined, ctx.release, undefined, {
        listenerUrl: 'https://unused',
      }),
    );
  } catch (error) {
    ctx.status.condition('Installed', 'Unknown', 'RemovalFailed', firstLine(error));
    return { error: errorOf(error) };
  }
  await ctx.ops.releaseFinalizer();
  return {};
};
