import type { V1Secret } from '@kubernetes/client-node';
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import {
  RTB_FINALIZER,
  kubeconfigSecretOf,
  type RuntimeBootstrapper,
  runtimeBootstrappersPath,
} from '../../api/runtime-bootstrapper.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import type { ReadonlyStore } from '../../kube/store.js';
import type { HandlerResult } from '../../kube/work-queue.js';
import type { CertificateAuthority } from '../../pki/certificate-authority.js';
import { issueCertificate } from '../../pki/issue-certificate.js';
import { needsRenewal } from '../../pki/renewal.js';
import { x509 } from '../../pki/crypto-provider.js';
import { FIELD_MANAGER } from '../../kube/apply.js';
import {
  CA_BUNDLE_FIELD_MANAGER,
  RUNTIME_NAMESPACE,
  WATCHER_TLS_SECRET,
  webhookServiceDnsNames,
} from '../../api/runtime-names.js';
import { KCP_SERVING_POLICY, type ServingPolicy } from '../../pki/serving-policy.js';
import { executeSecretWrite } from '../../pki/serving-secret-write.js';
import { readServingSecret } from '../../webhook/serving-cert/serving-secret-codec.js';
import type { DirectMetrics } from './direct-metrics.js';
import { foreignWritesAfterOurs } from './foreign-writers.js';
import { RuntimeClientPool } from './runtime-clients.js';
import { RuntimeInstaller } from './runtime-installer.js';
import {
  planSources,
  type DriftSettings,
  type WebhookRelease,
  type WebhookTestRouting,
} from './runtime-manifests.js';
import type { ServingSettings } from './serving-certificate.js';
import type { BootstrapperOps, StateContext } from './state-context.js';
import { runStateMachine, sFnInitialize } from './state-machine.js';
import { StatusBuilder, statusChanged } from './status-builder.js';
import type { SyncSetResult } from './sync-set.js';
import type { RolloutChooser } from './rollout-chooser.js';
import { observeWebhookReport } from './webhook-report.js';

/** What the reconciler reads and writes. */
export interface ReconcilerDeps {
  /** The KCP (keep-alive: every status write would otherwise open a TLS connection). */
  readonly kcp: ClusterAccess;
  readonly bootstrappers: ReadonlyStore<RuntimeBootstrapper>;
  readonly kubeconfigSecrets: ReadonlyStore<V1Secret>;
  readonly pool: RuntimeClientPool;
  /** The CA that signs, and the bundle of CAs to trust (two during a CA rotation). */
  readonly cas: { current(): CertificateAuthority; trustBundle(): string };
  /** The drift channel; off when undefined. */
  readonly drift?: {
    readonly listenerUrl: string;
    readonly clientValidityMs?: number;
    readonly renewBeforeMs?: number;
  };
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
  /** Told after every reconcile (drift repair latency). */
  readonly onReconciled?: (key: string, ok: boolean) => void;
}

/**
 * Reconciles one RuntimeBootstrapper: runs the per-runtime state machine with real I/O and
 * writes the status only when it changed.
 */
export class BootstrapperReconciler {
  private readonly forced = new Set<string>();
  /** Per key: until when its serving certificate was found current (epoch ms), by this process. */
  private readonly servingCurrent = new Map<string, number>();
  private readonly serving: ServingSettings;

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
  }

  /** The next reconcile of `key` re-applies everything (periodic resync, drift repair). */
  force(key: string): void {
    this.forced.add(key);
  }

  /**
   * Drift repair's fast path: re-applies only the versioned set to the runtime, outside the full
   * state machine, so a repair never waits behind a whole reconcile of the same runtime (writes
   * are server-side applies of the same content, so running beside it is safe). The reported
   * object is back after a handful of requests; the forced full reconcile queued with it covers
   * everything else (the webhook's own objects).
   */
  async repairSet(key: string): Promise<void> {
    const rb = this.d.bootstrappers.get(key);
    if (!rb) return;
    // The runtime's own revision: a repair never hands it a set its wave has not reached.
    const set = this.d.rollout?.choose(rb)?.set ?? this.d.currentSet().result;
    if (!set.ok || rb.spec.paused || rb.metadata.deletionTimestamp) return;
    if (rb.status?.appliedVersion === undefined) return; // not installed yet: the reconcile does it
    const ops = this.ops(rb);
    ops.connect();
    await ops.apply(planSources(set.set));
  }

  /** Work-queue handler. */
  async reconcile(key: string): Promise<HandlerResult | undefined> {
    const rb = this.d.bootstrappers.get(key);
    if (!rb) {
      this.servingCurrent.delete(key);
      return undefined;
    }
    const log = this.d.logger.child({ runtimeBootstrapper: key, runtime: rb.spec.runtimeID });
    const forceResync = this.forced.delete(key);
    const live = this.d.currentSet();
    const choice = this.d.rollout?.choose(rb);
    const set = choice?.set ?? live.result;
    const release = choice?.release ?? this.d.release;
    const status = new StatusBuilder(rb, new Date());
    const ops = this.ops(rb);
    const servingCurrentUntil = this.servingCurrent.get(key);
    const ctx: StateContext = {
      rb,
      set,
      release,
      ...(this.d.webhook?.registrationUrl !== undefined
        ? { registrationUrl: this.d.webhook.registrationUrl }
        : {}),
      forceResync,
      ops,
      status,
      serving: this.serving,
      wrote: false,
      servingWrites: 0,
      wakeAfterMs: undefined,
      ...(servingCurrentUntil !== undefined ? { servingCurrentUntil } : {}),
      ...(this.d.trustPollMs !== undefined ? { trustPollMs: this.d.trustPollMs } : {}),
    };
    const outcome = await runStateMachine(sFnInitialize, ctx);
    if (ctx.servingCheckedUntil !== undefined) this.servingCurrent.set(key, ctx.servingCheckedUntil);
    else this.servingCurrent.delete(key);
    // Under a rollout: the wave, and what the webhook says of the set applied.
    let pollAfterMs: number | undefined;
    if (choice && !outcome.error) {
      status.wave(choice.wave);
      ({ pollAfterMs } = await observeWebhookReport(status, () => ops.readWebhookReport()));
    }
    const next = status.build();
    if (set.ok && next.appliedVersion === set.set.version && rb.status?.appliedVersion !== set.set.version) {
      this.d.metrics.propagationSeconds.observe((Date.now() - live.changedAt) / 1000);
    }
    if (statusChanged(rb.status, next)) await this.writeStatus(rb, next);
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

  private ops(rb: RuntimeBootstrapper): BootstrapperOps {
    let installer: RuntimeInstaller | undefined;
    let drift: DriftSettings | undefined;
    let serverHost = '';
    const namespace = this.d.webhookNamespace ?? RUNTIME_NAMESPACE;
    const need = (): RuntimeInstaller => {
      if (!installer) throw new Error('internal: runtime not connected');
      return installer;
    };
    return {
      addFinalizer: () => this.setFinalizers(rb, [...(rb.metadata.finalizers ?? []), RTB_FINALIZER]),
      releaseFinalizer: async () => {
        await this.setFinalizers(
          rb,
          (rb.metadata.finalizers ?? []).filter((f) => f !== RTB_FINALIZER),
        );
        this.d.pool.drop(rb.spec.runtimeID);
      },
      connect: () => {
        const ref = kubeconfigSecretOf(rb);
        const secret = this.d.kubeconfigSecrets.get(`${ref.namespace}/${ref.name}`);
        const data = secret?.data?.[ref.key];
        if (!data)
          throw new Error(`kubeconfig Secret ${ref.namespace}/${ref.name} (key ${ref.key}) not found`);
        // No request here: the first call of the pass tells whether the runtime answers.
        const access = this.d.pool.get(rb.spec.runtimeID, data);
        serverHost = hostOf(access.getCurrentCluster()?.server);
        this.d.metrics.runtimeClients.set(this.d.pool.size);
        installer = new RuntimeInstaller(access, this.d.runtimeTimeoutMs);
      },
      answered: () => installer?.answered ?? false,
      drift: async () => {
        const settings = this.d.drift;
        if (!settings) return undefined;
        if (drift) return drift;
        const ca = this.d.cas.current();
        const bundle = this.d.cas.trustBundle();
        const domain = domainOf(rb, serverHost);
        const current = await need().readTls(namespace, WATCHER_TLS_SECRET);
        const renewBefore = settings.renewBeforeMs ?? 7 * 24 * 3600_000;
        const reusable =
          current !== undefined &&
          current.caPem === bundle &&
          !(await needsRenewal(current.certPem, ca, new Date(), renewBefore)) &&
          identifies(current.certPem, rb.spec.runtimeID, domain);
        if (reusable) {
          drift = {
            listenerUrl: settings.listenerUrl,
            clientTls: { certPem: current.certPem, keyPem: current.keyPem, caPem: bundle },
          };
          return drift;
        }
        // CN = runtime ID, SAN = its domain: what the KCP listener verifies and pins.
        const issued = await issueCertificate(ca, {
          commonName: rb.spec.runtimeID,
          dnsNames: [domain],
          usage: 'client',
          validityMs: settings.clientValidityMs ?? 30 * 24 * 3600_000,
        });
        drift = {
          listenerUrl: settings.listenerUrl,
          clientTls: { certPem: issued.certPem, keyPem: issued.keyPem, caPem: bundle },
        };
        return drift;
      },
      apply: (objects) => need().apply(objects),
      deploymentReadiness: () => need().deploymentReadiness(namespace),
      uninstall: (plan) => need().uninstall(plan),
      foreignWrites: async (objects) =>
        foreignWritesAfterOurs(await need().writersOf(objects), [FIELD_MANAGER, CA_BUNDLE_FIELD_MANAGER]),
      readServing: () => need().readServing(namespace),
      writeServingSecret: async (current, write) => {
        const next = await executeSecretWrite(readServingSecret(current), write, {
          now: this.serving.now(),
          dnsNames: this.serving.dnsNames,
          ipAddresses: this.serving.ipAddresses,
          externalCa: this.d.cas.current(),
        });
        await need().writeServingSecret(namespace, current, next);
      },
      writeCaBundle: (view, bundlePem) => need().writeCaBundle(view, bundlePem),
      readWebhookReport: () => need().readWebhookReport(namespace),
    };
  }

  private path(rb: RuntimeBootstrapper, sub = ''): string {
    return `${runtimeBootstrappersPath(rb.metadata.namespace)}/${rb.metadata.name}${sub}`;
  }

  private async setFinalizers(rb: RuntimeBootstrapper, finalizers: string[]): Promise<void> {
    // resourceVersion makes it a compare-and-swap: a concurrent change fails with 409 and retries.
    await kubeRequest(this.d.kcp, {
      method: 'PATCH',
      path: this.path(rb),
      body: { metadata: { finalizers, resourceVersion: rb.metadata.resourceVersion } },
      timeoutMs: 15_000,
    });
  }

  private async writeStatus(rb: RuntimeBootstrapper, status: RuntimeBootstrapper['status']): Promise<void> {
    try {
      await kubeRequest(this.d.kcp, {
        method: 'PATCH',
        path: this.path(rb, '/status'),
        body: { status },
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

/** Annotation with the runtime's domain (KIM's name for it). */
export const SKR_DOMAIN_ANNOTATION = 'skr-domain';

/** The runtime's domain: the `skr-domain` annotation, else the host of its API server URL. */
export function domainOf(rb: RuntimeBootstrapper, serverHost: string): string {
  return rb.metadata.annotations?.[SKR_DOMAIN_ANNOTATION] ?? serverHost;
}

function hostOf(server: string | undefined): string {
  try {
    return server ? new URL(server).hostname.replace(/^\[|\]$/g, '') : '';
  } catch {
    return '';
  }
}

function identifies(certPem: string, runtimeId: string, domain: string): boolean {
  try {
    const cert = new x509.X509Certificate(certPem);
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
    const dns = san?.names.items.filter((n) => n.type === 'dns').map((n) => n.value) ?? [];
    return cert.subjectName.getField('CN')[0] === runtimeId && dns.includes(domain);
  } catch {
    return false;
  }
}

function reasonOf(status: RuntimeBootstrapper['status']): string {
  const failing = status?.conditions?.find((c) => c.status !== 'True');
  return failing ? `${failing.type}:${failing.reason}` : 'Unknown';
}
