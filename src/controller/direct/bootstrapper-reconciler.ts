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
import { KCP_SERVING_POLICY, type ServingPolicy } from '../../serving-cert/serving-policy.js';
import type { DirectMetrics } from './direct-metrics.js';
import type { RuntimeClientPool } from './runtime-clients.js';
import { planSources, type WebhookRelease, type WebhookTestRouting } from './runtime-manifests.js';
import { bootstrapperPath, runtimeOps, type RuntimeOps, type RuntimeOpsDeps } from './runtime-ops.js';
import { SetLedger, setObjectKey } from './set-writes.js';
import type { ServingSettings } from './serving-certificate.js';
import { firstLine, type BootstrapperOps, type Outcome, type StateContext } from './state-context.js';
import { runStateMachine, sFnInitialize } from './state-machine.js';
import { StatusBuilder, statusChanged } from './status-builder.js';
import type { SyncSetResult } from './sync-set.js';
import type { RolloutChooser } from './rollout-chooser.js';
import {
  observeTrustProjection,
  observeWebhookReport,
  observeWorkloads,
  recordReportRefusal,
  WORKLOAD_SLOW_LOOK_MS,
  WORKLOAD_WATCH_MS,
} from './webhook-report.js';
import type { PreflightCandidate } from './preflight-candidate.js';
import { setHasTrustBundle, sourcesFor } from './trust-bundle-api-status.js';
import type { AttestationBook } from './attestation-book.js';
import type { BootstrapperIdentity } from './bootstrapper-index.js';

/** What the reconciler reads and writes. */
export interface ReconcilerDeps {
  /** The KCP (keep-alive: every status write would otherwise open a TLS connection). */
  readonly kcp: ClusterAccess;
  readonly bootstrappers: ReadonlyStore<RuntimeBootstrapper>;
  readonly kubeconfigSecrets: ReadonlyStore<V1Secret>;
  readonly pool: RuntimeClientPool;
  /** The CA that signs, and the bundle of CAs to trust (two during a CA rotation). */
  readonly cas: RuntimeOpsDeps['cas'];
  /** The drift channel; off when undefined. */
  readonly drift?: RuntimeOpsDeps['drift'];
  readonly release: WebhookRelease;
  /** The current source set and when it last changed. */
  readonly currentSet: () => { result: SyncSetResult; changedAt: number };
  readonly metrics: DirectMetrics;
  readonly logger: Logger;
  readonly webhookNamespace?: string;
  /** Timing of the webhook serving certificates (default {@link KCP_SERVING_POLICY}). */
  readonly servingPolicy?: ServingPolicy;
  /** The webhook registration and its certificate's extra names (tests: no kubelet runs Pods there). */
  readonly webhook?: WebhookTestRouting;
  readonly runtimeTimeoutMs?: number;
  /** How often a trust-bundle rotation under way is looked at (default 30 s). */
  readonly trustPollMs?: number;
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
  /** The runtime I/O of one pass (default: ./runtime-ops.ts over {@link ReconcilerDeps.pool}; unit tests: a fake). */
  readonly opsFor?: (rb: RuntimeBootstrapper, fence: LeaseFence, urgent?: boolean) => RuntimeOps;
  /** One pass of the per-runtime state machine (default: ./state-machine.ts from Initialize; unit tests: a fake). */
  readonly runPass?: (ctx: StateContext) => Promise<Outcome>;
  /** Writes a CR's status to the KCP (default: a merge patch of its status subresource; unit tests: a fake). */
  readonly writeStatus?: (rb: RuntimeBootstrapper, status: RuntimeBootstrapper['status']) => Promise<void>;
}

/**
 * Reconciles one RuntimeBootstrapper: runs the per-runtime state machine with real I/O and
 * writes the status only when it changed.
 */
export class BootstrapperReconciler {
  private readonly forced = new Set<string>();
  /** Per key: until when its serving certificate was found current (epoch ms), by this process. */
  private readonly servingCurrent = new Map<string, number>();
  /** Per key: notAfter (epoch ms) of the drift client certificate the last good pass left on the runtime. */
  private readonly driftCertificates = new Map<string, number>();
  /** Per key: when this process last read the runtime's workloads (epoch ms), to bound the reads. */
  private readonly workloadLooks = new Map<string, number>();
  private readonly serving: ServingSettings;
  private readonly opsDeps: RuntimeOpsDeps;
  /** What this process's passes wrote of the set per runtime: a rotation writes only what changed. */
  private readonly ledger = new SetLedger();
  private readonly opsFor: (rb: RuntimeBootstrapper, fence: LeaseFence, urgent?: boolean) => RuntimeOps;
  private readonly runPass: (ctx: StateContext) => Promise<Outcome>;
  private readonly writeStatus: (
    rb: RuntimeBootstrapper,
    status: RuntimeBootstrapper['status'],
  ) => Promise<void>;

  constructor(private readonly d: ReconcilerDeps) {
    const namespace = d.webhookNamespace ?? RUNTIME_NAMESPACE;
    const extra = d.webhook?.extraSans ?? [];
    this.serving = {
      policy: d.servingPolicy ?? KCP_SERVING_POLICY,
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
      ...(d.drift ? { drift: d.drift } : {}),
      ...(d.runtimeTimeoutMs !== undefined ? { runtimeTimeoutMs: d.runtimeTimeoutMs } : {}),
      namespace,
      serving: this.serving,
      ledger: this.ledger,
      clients: (n) => {
        d.metrics.runtimeClients.set(n);
      },
    };
    this.opsFor = d.opsFor ?? ((rb, fence, urgent) => runtimeOps(rb, this.opsDeps, fence, urgent));
    this.runPass = d.runPass ?? ((ctx) => runStateMachine(sFnInitialize, ctx));
    this.writeStatus = d.writeStatus ?? ((rb, status) => this.patchStatus(rb, status));
  }

  /** notAfter (epoch ms) of the drift client certificate on the runtime of `key`, as far as this process knows. */
  driftCertificateNotAfter(key: string): number | undefined {
    return this.driftCertificates.get(key);
  }

  /** The next reconcile of `key` re-applies everything (periodic resync, drift repair). */
  force(key: string): void {
    this.forced.add(key);
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
      this.servingCurrent.delete(key);
      this.driftCertificates.delete(key);
      this.workloadLooks.delete(key);
      this.d.attestations?.forget(key);
      this.ledger.forgetBootstrapper(key);
      return undefined;
    }
    const log = this.d.logger.child({ runtimeBootstrapper: key, runtime: rb.spec.runtimeID });
    const forceResync = this.forced.delete(key);
    const live = this.d.currentSet();
    const choice = this.d.rollout?.choose(rb);
    const set = choice?.set ?? live.result;
    const release = choice?.release ?? this.d.release;
    const status = new StatusBuilder(rb, new Date());
    const ops = this.opsFor(rb, fence);
    const servingCurrentUntil = this.servingCurrent.get(key);
    const ctx: StateContext = {
      rb,
      set,
      release,
      ...(this.d.webhook?.registrationUrl !== undefined
        ? { registrationUrl: this.d.webhook.registrationUrl }
        : {}),
      forceResync,
      identity: this.d.identityOf?.(rb),
      ops,
      status,
      serving: this.serving,
      wrote: false,
      servingWrites: 0,
      wakeAfterMs: undefined,
      ...(servingCurrentUntil !== undefined ? { servingCurrentUntil } : {}),
      ...(this.d.trustPollMs !== undefined ? { trustPollMs: this.d.trustPollMs } : {}),
    };
    let outcome = await this.runPass(ctx);
    if (!fence()) {
      if (forceResync) this.forced.add(key);
      this.d.attestations?.forget(key);
      this.driftCertificates.delete(key);
      // Another replica may write there now: what this one wrote is no longer known to be there.
      this.ledger.forgetBootstrapper(key);
      this.fenced(key, 'reconcile', outcome.error);
      return undefined;
    }
    if (ctx.servingCheckedUntil !== undefined) this.servingCurrent.set(key, ctx.servingCheckedUntil);
    else this.servingCurrent.delete(key);
    const driftNotAfter = ops.driftNotAfter();
    if (!outcome.error && driftNotAfter !== undefined) this.driftCertificates.set(key, driftNotAfter);
    // Under a rollout: the wave, and what the webhook says of the set applied. Without one
    // (none, or the policy deleted): neither, so no stale wave or report stays in the status.
    let pollAfterMs: number | undefined;
    // One read of the webhook's report serves both looks at it.
    let report: ReturnType<BootstrapperOps['readWebhookReport']> | undefined;
    const readReport = (): ReturnType<BootstrapperOps['readWebhookReport']> =>
      (report ??= ops.readWebhookReport().then((r) => {
        recordReportRefusal(status, r);
        return r;
      }));
    if (!choice) status.noRollout();
    else if (!outcome.error) {
      status.wave(choice.wave);
      ({ pollAfterMs } = await observeWebhookReport(status, readReport));
    }
    if (!outcome.error && set.ok) {
      const projection = await observeTrustProjection(status, readReport, {
        hasBundle: setHasTrustBundle(set.set),
        thorough: forceResync || ctx.wrote,
        nowMs: Date.now(),
      });
      if (projection.pollAfterMs !== undefined)
        pollAfterMs = Math.min(pollAfterMs ?? Infinity, projection.pollAfterMs);
    }
    // Workload health and the preflight, with or without a policy (DESIGN §11): read on the
    // passes made anyway, bounded, and often while the rollout watches this runtime. A pass that
    // just wrote a new set (or the webhook's objects) sends no read of its own for it: no Pod can
    // be under that set yet.
    const wroteSet = status.build().appliedVersion !== rb.status?.appliedVersion;
    const freshSet = (wroteSet || ctx.wrote) && choice?.watch !== true && report === undefined;
    if (!outcome.error && status.build().state === 'Ready') {
      if (freshSet) {
        pollAfterMs = Math.min(pollAfterMs ?? Infinity, WORKLOAD_SLOW_LOOK_MS);
      } else {
        const nowMs = Date.now();
        const look = await observeWorkloads(status, readReport, {
          watch: choice?.watch === true,
          nowMs,
          ...(this.workloadLooks.has(key) ? { lastLookMs: this.workloadLooks.get(key) } : {}),
        });
        if (look.looked) this.workloadLooks.set(key, nowMs);
        pollAfterMs = Math.min(pollAfterMs ?? Infinity, look.pollAfterMs);
      }
      const retry = await this.placePreflight(
        ops,
        status,
        rb.status?.preflightCandidate,
        choice?.preflight,
        log,
      );
      if (retry !== undefined) pollAfterMs = Math.min(pollAfterMs, retry);
    }
    // A call that broke a bound (too slow, too much) where a state caught the failure and went on,
    // or in a look at the report: the pass failed all the same, and RuntimeReachable says why.
    const refusal = ops.refusal();
    if (refusal?.reason === 'Stopping') {
      // Abandoned because this process stops: nothing to report, the next pass (here or on
      // another replica) finds the runtime as it is.
      if (forceResync) this.forced.add(key);
      throw refusal;
    }
    if (refusal !== undefined && outcome.error !== refusal) {
      status.state('Error').condition('RuntimeReachable', 'False', refusal.reason, firstLine(refusal));
      outcome = { error: refusal };
    }
    const next = status.build();
    this.record(key, ops.observed(), forceResync && !outcome.error && next.state === 'Ready', next.state);
    if (set.ok && next.appliedVersion === set.set.version && rb.status?.appliedVersion !== set.set.version) {
      this.d.metrics.propagationSeconds.observe((Date.now() - live.changedAt) / 1000);
    }
    if (statusChanged(rb.status, next)) {
      await this.writeStatus(rb, next).catch((error: unknown) => {
        // The KCP is every pass's: its 429 slows the whole fan-out, not only this runtime.
        if (statusCodeOf(error) === 429) this.d.kcpThrottled?.();
        throw error;
      });
    }
    this.d.onReconciled?.(key, outcome.error === undefined && next.state !== 'Error');
    if (outcome.error) {
      this.d.metrics.syncErrors.inc({ reason: reasonOf(next) });
      log.warn({ err: outcome.error, state: next.state }, 'runtime reconcile failed; retrying with backoff');
      if (forceResync) this.forced.add(key);
      throw outcome.error;
    }
    log.debug({ state: next.state, appliedVersion: next.appliedVersion }, 'reconciled');
    const requeueAfter = Math.min(outcome.requeueAfterMs ?? Infinity, pollAfterMs ?? Infinity);
    return Number.isFinite(requeueAfter) ? { requeueAfter } : undefined;
  }

  /**
   * Puts the candidate the rollout asks this runtime's webhook to check on the runtime, or takes
   * an earlier one away; only on a change (the status remembers the candidate left there). A failed
   * write asks for another pass soon.
   */
  private async placePreflight(
    ops: RuntimeOps,
    status: StatusBuilder,
    have: string | undefined,
    want: PreflightCandidate | undefined,
    log: Logger,
  ): Promise<number | undefined> {
    if (want?.version === have) return undefined;
    try {
      await ops.writePreflight(want);
      status.preflightCandidate(want?.version);
      return undefined;
    } catch (error) {
      log.warn({ err: error, candidate: want?.version ?? null }, 'could not place the preflight candidate');
      return WORKLOAD_WATCH_MS;
    }
  }

  /**
   * Records what the pass left on the runtime: a forced pass that ended Ready wrote and read
   * every managed object (a complete record); any other merges what it saw. Deleted or paused:
   * nothing there to attest.
   */
  private record(
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

  private async patchStatus(rb: RuntimeBootstrapper, status: RuntimeBootstrapper['status']): Promise<void> {
    try {
      await kubeRequest(this.d.kcp, {
        method: 'PATCH',
        path: bootstrapperPath(rb, '/status'),
        // Fields dropped from the status (a wave, a report's refusal) are removed, not kept.
        body: { status: replacingPatch(rb.status, status ?? {}) },
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
