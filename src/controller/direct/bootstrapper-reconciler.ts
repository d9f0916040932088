import type { V1Secret } from '@kubernetes/client-node';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { replacingPatch } from '../../kube/merge-patch.js';
import { leaseLostIn, UNFENCED, type LeaseFence } from '../../kube/lease-fence.js';
import type { ReadonlyStore } from '../../kube/store.js';
import type { HandlerResult } from '../../kube/work-queue-options.js';
import { RUNTIME_NAMESPACE, webhookServiceDnsNames } from '../../api/runtime-names.js';
import { mountsTrustBundle } from './admission-policy-plan.js';
import type { DirectMetrics } from './direct-metrics.js';
import type { RuntimeClientPool } from './runtime-clients.js';
import { planSources } from './runtime-manifests.js';
import { bootstrapperPath, runtimeOps, type RuntimeOps, type RuntimeOpsDeps } from './runtime-ops.js';
import { setObjectKey } from './set-writes.js';
import type { ServingSettings } from './serving-certificate.js';
import type { BootstrapperOps, StateFn } from './state-context.js';
import type { DirectModeSettings } from './direct-mode-options.js';
import { RuntimeRecords } from './runtime-record.js';
import { runStateMachine, sFnInitialize } from './state-machine.js';
import { StatusBuilder, statusChanged } from './status-builder.js';
import type { SyncSetResult } from './sync-set.js';
import type { RolloutChooser } from './rollout-chooser.js';
import { setHasTrustBundle, sourcesFor } from './trust-bundle-api-status.js';
import type { AttestationBook } from './attestation-book.js';
import type { BootstrapperIdentity } from './bootstrapper-index.js';
import type { RolloutWatches } from './rollout-watch.js';

/** How soon a pass whose status write met a newer CR runs again (the cache brings it within ms). */
export const STATUS_CONFLICT_REQUEUE_MS = 500;
/** How soon a runtime whose admission policy must stop mounting the trust bundle gets its forced pass. */
export const UNMOUNT_REQUEUE_MS = 1_000;

/** Direct mode's settings the reconciler reads, resolved once (./direct-mode-options.ts) and passed by reference. */
export type ReconcilerSettings = Pick<
  DirectModeSettings,
  | 'release'
  | 'drift'
  | 'servingPolicy'
  | 'webhookRouting'
  | 'runtimeTimeoutMs'
  | 'trustPollMs'
  | 'workloadWatchMs'
>;

/** What the reconciler reads and writes. */
export interface ReconcilerDeps {
  readonly settings: ReconcilerSettings;
  /** The KCP (keep-alive: every status write would otherwise open a TLS connection). */
  readonly kcp: ClusterAccess;
  readonly bootstrappers: ReadonlyStore<RuntimeBootstrapper>;
  readonly kubeconfigSecrets: ReadonlyStore<V1Secret>;
  readonly pool: RuntimeClientPool;
  /** The CA that signs, and the bundle of CAs to trust (two during a CA rotation). */
  readonly cas: RuntimeOpsDeps['cas'];
  /** The current source set and when it last changed. */
  readonly currentSet: () => { result: SyncSetResult; changedAt: number };
  readonly metrics: DirectMetrics;
  readonly logger: Logger;
  /** The rollout: which set and release each runtime gets (all the live ones when undefined). */
  readonly rollout?: RolloutChooser;
  /** Told when the KCP answers a status write with 429 (the fan-out's admission halves). */
  readonly kcpThrottled?: () => void;
  /** Told after every reconcile (drift repair latency). */
  readonly onReconciled?: (key: string, ok: boolean) => void;
  /** Where each pass records the resourceVersions it left (attestations are compared with them). */
  readonly attestations?: AttestationBook;
  /** Who else claims a CR's runtime ID and kubeconfig Secret. */
  readonly identityOf?: (rb: RuntimeBootstrapper) => BootstrapperIdentity;
  /** Wake a runtime's pass when its rollout moves (polled when undefined). */
  readonly rolloutWatches?: RolloutWatches;
  /** The runtime I/O of one pass (default: ./runtime-ops.ts over {@link ReconcilerDeps.pool}; unit tests: a fake). */
  readonly opsFor?: (rb: RuntimeBootstrapper, fence: LeaseFence, urgent?: boolean) => RuntimeOps;
  /**
   * Where the machine starts (default: ./state-machine.ts's Initialize; unit tests: a fake state
   * that ends the states' work at once, so the last state runs as in production).
   */
  readonly firstState?: StateFn;
  /**
   * Writes a CR's status to the KCP if the CR is still at `resourceVersion`, else fails with 409
   * (default: a merge patch of its status subresource; unit tests: a fake).
   */
  readonly writeStatus?: (
    rb: RuntimeBootstrapper,
    status: RuntimeBootstrapper['status'],
    resourceVersion: string | undefined,
  ) => Promise<void>;
}

/**
 * Reconciles one RuntimeBootstrapper: runs the per-runtime state machine with real I/O and
 * writes the status only when it changed.
 */
export class BootstrapperReconciler {
  /** Everything kept of each runtime between passes; dropped whole when its CR is gone. */
  private readonly records = new RuntimeRecords();
  private readonly serving: ServingSettings;
  private readonly opsDeps: RuntimeOpsDeps;
  private readonly opsFor: (rb: RuntimeBootstrapper, fence: LeaseFence, urgent?: boolean) => RuntimeOps;
  private readonly firstState: StateFn;
  private readonly writeStatus: NonNullable<ReconcilerDeps['writeStatus']>;

  constructor(private readonly d: ReconcilerDeps) {
    const s = d.settings;
    const namespace = RUNTIME_NAMESPACE;
    const extra = s.webhookRouting?.extraSans ?? [];
    this.serving = {
      policy: s.servingPolicy,
      dnsNames: [...webhookServiceDnsNames(namespace), ...extra.filter((n) => isIP(n) === 0)],
      ipAddresses: extra.filter((n) => isIP(n) !== 0),
      caPem: () => d.cas.current().certPem,
      now: Date.now,
    };
    this.opsDeps = {
      kcp: d.kcp,
      kubeconfigSecrets: d.kubeconfigSecrets,
      pool: d.pool,
      cas: d.cas,
      drift: s.drift,
      runtimeTimeoutMs: s.runtimeTimeoutMs,
      namespace,
      serving: this.serving,
      written: (key) => this.records.of(key).written,
      rollouts: d.rolloutWatches,
      clients: (n) => {
        d.metrics.runtimeClients.set(n);
      },
    };
    this.opsFor = d.opsFor ?? ((rb, fence, urgent) => runtimeOps(rb, this.opsDeps, fence, urgent));
    this.firstState = d.firstState ?? sFnInitialize;
    this.writeStatus = d.writeStatus ?? ((rb, status, rv) => this.patchStatus(rb, status, rv));
  }

  /** notAfter (epoch ms) of the drift client certificate on the runtime of `key`, as far as this process knows. */
  driftCertificateNotAfter(key: string): number | undefined {
    return this.records.peek(key)?.driftNotAfter;
  }

  /** The next reconcile of `key` re-applies everything (periodic resync, drift repair). */
  force(key: string): void {
    this.records.of(key).forced = true;
  }

  /** Drops everything kept of `key` (its CR is gone): a CR made again under that key starts fresh. */
  forget(key: string): void {
    this.records.forget(key);
    this.d.attestations?.forget(key);
    this.d.rolloutWatches?.forget(key);
  }

  /**
   * Drift repair's fast path: re-applies objects of the versioned set to the runtime, outside the
   * full state machine, so a repair never waits behind a whole reconcile of the same runtime
   * (writes are server-side applies of the same content, so running beside it is safe). With
   * `reported` (keys of {@link setObjectKey}) only the set's objects among them are written: the
   * reported object is back after one request, where the round trip to the runtime is what costs;
   * the forced full reconcile queued with it covers everything else (the webhook's own objects).
   * Writes only while `fence` holds; resolves false when the fence stopped it or nothing reported
   * is of the set.
   */
  async repairSet(
    key: string,
    fence: LeaseFence = UNFENCED,
    reported?: ReadonlySet<string>,
  ): Promise<boolean> {
    const rb = this.d.bootstrappers.get(key);
    if (!rb) return true;
    // The runtime's own revision: a repair never hands it a set its wave has not reached.
    const set = this.d.rollout?.choose(rb)?.set ?? this.d.currentSet().result;
    if (!set.ok || rb.spec.paused || rb.metadata.deletionTimestamp) return true;
    if (rb.status?.appliedVersion === undefined) return true; // not installed yet: the reconcile does it
    const planned = planSources(set.set);
    const objects = reported === undefined ? planned : planned.filter((o) => reported.has(setObjectKey(o)));
    if (objects.length === 0) return false;
    // Urgent: its answers are not paced behind a fan-out's.
    const ops = this.opsFor(rb, fence, true);
    ops.connect();
    try {
      const api = setHasTrustBundle({ objects }) ? await ops.trustBundleApi() : undefined;
      await ops.apply(sourcesFor(objects, api));
      return true;
    } catch (error) {
      if (leaseLostIn(error) === undefined) throw error;
      this.fenced(key, 'repair', error);
      return false;
    } finally {
      // What the repair applied before it ended, failed or not, is what the runtime now holds.
      this.d.attestations?.passEnded(key, { observed: ops.observed(), complete: false });
    }
  }

  /**
   * Work-queue handler; runtime writes only while `fence` holds, and once it no longer does the
   * pass ends without a status write (the runtime is another replica's to report on).
   */
  async reconcile(key: string, fence: LeaseFence = UNFENCED): Promise<HandlerResult | undefined> {
    const rb = this.d.bootstrappers.get(key);
    if (!rb) {
      this.forget(key);
      return undefined;
    }
    const record = this.records.of(key);
    const log = this.d.logger.child({ runtimeBootstrapper: key, runtime: rb.spec.runtimeID });
    const forceResync = record.forced;
    record.forced = false;
    const live = this.d.currentSet();
    const choice = this.d.rollout?.choose(rb);
    const set = choice?.set ?? live.result;
    const status = new StatusBuilder(rb, new Date());
    const ops = this.opsFor(rb, fence);
    const pass = await runStateMachine(this.firstState, {
      rb,
      set,
      release: choice?.release ?? this.d.settings.release,
      registrationUrl: this.d.settings.webhookRouting?.registrationUrl,
      forceResync,
      identity: this.d.identityOf?.(rb),
      ops,
      status,
      serving: this.serving,
      servingCurrentUntil: record.servingCurrentUntil,
      trustPollMs: this.d.settings.trustPollMs,
      workloadWatchMs: this.d.settings.workloadWatchMs,
      rollout: choice,
      workloadsLookedAt: record.workloadsLookedAt,
      fence,
      log,
    });
    const { outcome } = pass;
    if (!fence()) {
      record.forced ||= forceResync;
      record.handedOver();
      this.d.attestations?.forget(key);
      // The runtime's rollout is the next owner's to follow.
      this.d.rolloutWatches?.forget(key);
      this.fenced(key, 'reconcile', outcome.error);
      return undefined;
    }
    record.servingCurrentUntil = pass.servingCheckedUntil;
    const driftNotAfter = ops.driftNotAfter();
    if (!outcome.error && driftNotAfter !== undefined) record.driftNotAfter = driftNotAfter;
    const refusal = ops.refusal();
    if (refusal?.reason === 'Stopping') {
      // Abandoned because this process stops: nothing to report, the next pass (here or on
      // another replica) finds the runtime as it is.
      record.forced ||= forceResync;
      throw refusal;
    }
    const next = status.build();
    this.noteObserved(
      key,
      ops.observed(),
      forceResync && !outcome.error && next.state === 'Ready',
      next.state,
    );
    if (set.ok && next.appliedVersion === set.set.version && rb.status?.appliedVersion !== set.set.version) {
      this.d.metrics.propagationSeconds.observe((Date.now() - live.changedAt) / 1000);
    }
    if (statusChanged(rb.status, next)) {
      try {
        await this.writeStatus(rb, next, ops.resourceVersion());
      } catch (error) {
        // The KCP is every pass's: its 429 slows the whole fan-out, not only this runtime.
        if (statusCodeOf(error) === 429) this.d.kcpThrottled?.();
        if (statusCodeOf(error) !== 409 || outcome.error) throw error;
        // The status was built on a copy the CR has moved past (the cache had not yet brought the
        // last pass's write): written, it would drop what that write added. The pass runs again
        // once the cache has the CR as it is (controller-runtime's requeue on conflict).
        log.debug({ appliedVersion: next.appliedVersion }, 'status built on an old copy of the CR; again');
        return { requeueAfter: STATUS_CONFLICT_REQUEUE_MS };
      }
    }
    // A look counts once its result is in the status: a write lost (a conflict, an error) leaves
    // the next pass's look due, or the figures would wait for the next look at rest.
    if (pass.workloadsLookedAt !== undefined) record.workloadsLookedAt = pass.workloadsLookedAt;
    this.d.onReconciled?.(key, outcome.error === undefined && next.state !== 'Error');
    if (outcome.error) {
      this.d.metrics.syncErrors.inc({ reason: reasonOf(next) });
      log.warn({ err: outcome.error, state: next.state }, 'runtime reconcile failed; retrying with backoff');
      // A forced pass that does not end well is forced again, until one does.
      record.forced ||= forceResync;
      throw outcome.error;
    }
    // The admission policy was written to mount the trust bundle, and the runtime now says it must
    // not (a node pool whose kubelets cannot read the bundle came): its parameters are written
    // again by a forced pass now, not at the next full resync. The other way round waits: the
    // webhook adds the mount meanwhile.
    if (
      next.admissionPolicyAPI !== undefined &&
      mountsTrustBundle(rb.status?.conditions) &&
      !mountsTrustBundle(next.conditions)
    ) {
      record.forced = true;
      return { requeueAfter: UNMOUNT_REQUEUE_MS };
    }
    log.debug({ state: next.state, appliedVersion: next.appliedVersion }, 'reconciled');
    return outcome.requeueAfterMs === undefined ? undefined : { requeueAfter: outcome.requeueAfterMs };
  }

  /**
   * Records what the pass left on the runtime: a forced pass that ended Ready wrote and read
   * every managed object (a complete record); any other merges what it saw. Deleted or paused:
   * nothing there to attest.
   */
  private noteObserved(
    key: string,
    observed: ReturnType<BootstrapperOps['observed']>,
    complete: boolean,
    state: string | undefined,
  ): void {
    const book = this.d.attestations;
    if (!book) return;
    if (state === 'Deleting' || state === 'Paused') book.forget(key);
    else book.passEnded(key, { observed, complete });
  }

  /**
   * A pass stopped by its fence: counted, and logged once per pass with the write it refused, if
   * it got as far as one (not an error: the Lease says why).
   */
  private fenced(key: string, pass: 'reconcile' | 'repair', error: unknown): void {
    this.d.metrics.fencedPasses.inc({ pass });
    this.d.logger.info(
      { runtimeBootstrapper: key, pass, refused: leaseLostIn(error)?.refused ?? null },
      "this replica's Lease is no longer held; leaving the runtime to its next owner",
    );
  }

  private async patchStatus(
    rb: RuntimeBootstrapper,
    status: RuntimeBootstrapper['status'],
    resourceVersion: string | undefined,
  ): Promise<void> {
    try {
      await kubeRequest(this.d.kcp, {
        method: 'PATCH',
        path: bootstrapperPath(rb, '/status'),
        // Fields dropped from the status (a wave, a report's refusal) are removed, not kept; the
        // resourceVersion makes the patch apply only to the copy it was computed from.
        body: { metadata: { resourceVersion }, status: replacingPatch(rb.status, status ?? {}) },
        timeoutMs: 15_000,
        // The watch brings the CR back; the answer is not read.
        parseResponse: false,
      });
    } catch (error) {
      // Gone after its finalizer was released: nothing left to report on.
      if (statusCodeOf(error) !== 404) throw error;
    }
  }
}

function reasonOf(status: RuntimeBootstrapper['status']): string {
  const failing = status?.conditions?.find((c) => c.status !== 'True');
  return failing ? `${failing.type}:${failing.reason}` : 'Unknown';
}
