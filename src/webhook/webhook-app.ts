import type { V1Namespace } from '@kubernetes/client-node';
import type { SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { KubeListWatch } from '../kube/list-watch.js';
import { Reflector } from '../kube/reflector.js';
import { LogRateLimit } from '../telemetry/log-rate-limit.js';
import { MetricsServer } from '../telemetry/metrics-endpoint.js';
import type { AdmissionContext } from './admission-handler.js';
import { cachedNamespaceOf } from '../kube/cached-namespace.js';
import { CertificateReloader, type CertificateFiles } from './certificate-reloader.js';
import { ConfigHolder } from './config-holder.js';
import { followConfig, type ConfigSourceSettings } from './config-following.js';
import { coreCalls } from './core-calls.js';
import { MissingNamespaces, type MissingNamespacesOptions } from './missing-namespaces.js';
import { namespaceAnnotationLookup } from './namespace-lookup.js';
import { followPullSecret, pullSecretPart, pullSecretRefOf } from './pull-secret-follower.js';
import { UNKNOWN_PART } from './set-revision.js';
import { RenamedCopySweeper, renamedCopyCalls } from '../runtime-agent/pull-secret/renamed-copy-sweeper.js';
import { createWebhookMetrics } from './webhook-metrics.js';
import { WebhookServer, type DrainOptions } from './webhook-server.js';
import { DRIFT_FLUSH_SECONDS } from '../api/serving-limits.js';
import { StopStack } from './stop-stack.js';
import { errorLine } from '../telemetry/error-line.js';
import { leafNotAfter } from '../pki/certificate-expiry.js';
import { startUpstreamCleanup } from '../runtime-agent/upstream-cleanup.js';
import type { ServingCertSettings } from '../serving-cert/serving-cert-settings.js';
import type { ServingCertKeeper } from '../serving-cert/serving-cert-keeper.js';
import { DriftForwarder } from '../drift/drift-forwarder.js';
import { RuntimeAttestor } from '../drift/attestor.js';
import { followTrustBundle } from '../runtime-agent/trust-restart/trust-bundle-follower.js';
import {
  startRestarterFromSettings,
  type TrustRestartSettings,
} from '../runtime-agent/trust-restart/restarter-settings.js';
import type { TrustRestarter } from '../runtime-agent/trust-restart/trust-restarter.js';
import { handleDriftValidation } from '../drift/validation-handler.js';
import { startPreflight, type Preflight } from '../runtime-agent/preflight/preflight-runner.js';
import {
  startWorkloadFollower,
  workloadSettingsOf,
} from '../runtime-agent/workload-health/workload-follower.js';
import { RUNTIME_NAMESPACE } from '../api/runtime-names.js';
import { API_NOT_SERVED, trustBundleMount } from '../api/trust-bundle-capability.js';
import { startCapabilityProber, type CapabilityProbeSettings } from './trust-capability/capability-prober.js';

/** Settings of `rtb webhook` (the config's source: {@link ConfigSourceSettings}). */
export interface WebhookAppOptions extends ConfigSourceSettings {
  /**
   * The cluster: client-node's `KubeConfig`, or `loadClusterAccess()`'s lighter loader (what
   * `rtb webhook` uses, so the process never loads client-node's generated APIs).
   */
  readonly kubeConfig: ClusterAccess;
  /** Serve these files (re-read when they change); without them the webhook keeps its own ({@link servingCert}). */
  readonly tls?: CertificateFiles;
  /** The webhook's own serving certificate, used when {@link tls} is absent. */
  readonly servingCert?: ServingCertSettings;
  readonly host?: string;
  readonly port?: number;
  /**
   * Serve `/metrics` over plain HTTP on this port (0 picks a free one) instead of the webhook's
   * HTTPS port, so a NetworkPolicy can admit scrapers there only (the rendered Deployment does).
   */
  readonly metricsPort?: number;
  /** Overrides the config's `failOpen`. */
  readonly failOpen?: boolean;
  /** `--landscape`: the value of `KYMA_LANDSCAPE` (feature set-landscape); wins over the config's. */
  readonly landscape?: string;
  readonly logger: Logger;
  readonly registry?: Registry;
  readonly excludedNamespaces?: readonly string[];
  /**
   * The drift channel: report tampering with our objects to the KCP listener over mutual TLS,
   * and attest the objects' resourceVersions to it now and then (../drift/attestor.ts).
   */
  readonly drift?: {
    readonly url: string;
    readonly certFile: string;
    readonly keyFile: string;
    readonly caFile: string;
    /** The first attestation waits a uniform random delay below this (default 30 s; tests: 0). */
    readonly attestationInitialDelayMs?: number;
  };
  /**
   * Remove upstream-only objects left by an upstream install once this webhook serves
   * (../api/upstream-leftovers.ts, a fixed list; default true).
   */
  readonly removeUpstreamLeftovers?: boolean;
  /** How long, and how many, namespaces the API server said do not exist are remembered. */
  readonly missingNamespaces?: MissingNamespacesOptions;
  /**
   * After a rename of the pull Secret, how long until copies of the earlier name that live Pods
   * still named are looked at again (./renamed-copy-sweeper.ts; default 10 min).
   */
  readonly renamedCopyResweepMs?: number;
  /** Restart Pods that run an old trust bundle (docs/trust-restart.md); off without it. */
  readonly trustRestart?: TrustRestartSettings;
  /**
   * How the runtime's trust-bundle capability is probed (docs/trust-bundle-api.md; namespace
   * default `POD_NAMESPACE` or kyma-system); false: never, the bundle is always mounted.
   */
  readonly trustCapability?: Partial<CapabilityProbeSettings> | false;
  /**
   * Where the preflight reaches registries that are not at `https://<registry>` (registry →
   * base URL, as containerd's hosts.toml `server`): local plain-HTTP registries, or an address
   * Pods reach a registry at. The preflight and the workload follower run where the status
   * report is written ({@link ConfigSourceSettings.statusConfigMap}) on the replica that leads
   * the trust restarter.
   */
  readonly registryServers?: Readonly<Record<string, string>>;
}

/** A running webhook process: server, caches, config, copier. */
export interface WebhookApp {
  readonly port: number;
  /** The metrics port, when {@link WebhookAppOptions.metricsPort} is set. */
  readonly metricsPort?: number;
  readonly config: ConfigHolder;
  readonly registry: Registry;
  ready(): boolean;
  /** Whether this replica writes the serving certificate now (only without {@link WebhookAppOptions.tls}). */
  isCertWriter(): boolean;
  /** The trust-bundle restarter (only with {@link WebhookAppOptions.trustRestart}). */
  readonly restarter: TrustRestarter | undefined;
  /**
   * Graceful: drains the server (./webhook-server.ts `close`; by default without the delay that
   * the CLI adds on SIGTERM), then stops caches and workers.
   */
  stop(drain?: DrainOptions): Promise<void>;
}

/**
 * Starts the webhook: caches, config, pull-Secret copier, HTTPS server; resolves once serving.
 * A start that fails (no usable certificate, an unreadable config file, the port in use) stops
 * whatever it had started and rejects with the reason on one line, so the process can exit.
 */
export async function startWebhookApp(o: WebhookAppOptions): Promise<WebhookApp> {
  const stoppers = new StopStack();
  try {
    return await startParts(o, stoppers);
  } catch (error) {
    await stoppers.stopAll(o.logger);
    throw new Error(`cannot start the webhook: ${errorLine(error)}`, { cause: error });
  }
}

/** {@link WebhookAppOptions} with every default applied: what the webhook reads besides the config's source. */
interface WebhookAppSettings {
  /** How the trust-bundle capability is probed (its namespace filled in); undefined: never, the bundle is always mounted. */
  readonly capabilityProbe: CapabilityProbeSettings | undefined;
  readonly removeUpstreamLeftovers: boolean;
  /** The drift channel: the listener and this runtime's client certificate files; undefined: off. */
  readonly drift:
    | {
        readonly url: string;
        readonly tls: { readonly certFile: string; readonly keyFile: string; readonly caFile: string };
        readonly attestationInitialDelayMs: number | undefined;
      }
    | undefined;
}

/** Applies the webhook's defaults: the only place they are filled in. */
function resolveWebhookAppSettings(o: WebhookAppOptions): WebhookAppSettings {
  return {
    capabilityProbe:
      o.trustCapability === false
        ? undefined
        : { namespace: process.env.POD_NAMESPACE || RUNTIME_NAMESPACE, ...o.trustCapability },
    removeUpstreamLeftovers: o.removeUpstreamLeftovers ?? true,
    drift: o.drift
      ? {
          url: o.drift.url,
          tls: { certFile: o.drift.certFile, keyFile: o.drift.keyFile, caFile: o.drift.caFile },
          attestationInitialDelayMs: o.drift.attestationInitialDelayMs,
        }
      : undefined,
  };
}

/**
 * The parts, each built after what it uses and started in order (see startWebhookApp): the
 * serving certificate, the caches and the config, the capability probe, the pull-Secret copier
 * and the trust bundle, then the server; last the parts that act only once this webhook serves.
 */
async function startParts(o: WebhookAppOptions, stoppers: StopStack): Promise<WebhookApp> {
  const s = resolveWebhookAppSettings(o);
  const logger = o.logger;
  const registry = o.registry ?? new Registry();
  if (!o.registry) collectDefaultMetrics({ register: registry });
  const metrics = createWebhookMetrics(registry);
  const core = coreCalls(o.kubeConfig);
  const holder = new ConfigHolder(logger.child({ part: 'config' }), metrics, o.landscape);
  const reflectorLogger = logger.child({ part: 'reflector' });

  // The certificate's source is built before the server that serves it (its first certificate),
  // and reaches the server once it exists: a swap before then only counts.
  const serverRef: { current?: WebhookServer } = {};
  const served = (tls: SecureContextOptions): void => {
    const notAfter = leafNotAfter(tls.cert);
    if (notAfter !== undefined) metrics.servingCertificateExpiry.set(notAfter / 1000);
  };
  const swap = (tls: SecureContextOptions): void => {
    serverRef.current?.setSecureContext(tls);
    served(tls);
  };
  const reloaded = (result: 'success' | 'failure'): void => {
    metrics.certReloads.inc({ result });
  };
  let reloader: CertificateReloader | undefined;
  let keeper: ServingCertKeeper | undefined;
  let tls: SecureContextOptions;
  // First, so a webhook with nothing to serve fails before it starts any watch.
  if (o.tls) {
    reloader = new CertificateReloader(o.tls, swap, reloaded, logger.child({ part: 'tls' }));
    try {
      tls = await reloader.load();
    } catch (cause) {
      const files = `${o.tls.certFile} with key ${o.tls.keyFile}`;
      throw new Error(`serving certificate ${files}: ${errorLine(cause)}`, { cause });
    }
  } else {
    // Loaded only here: it brings the certificate-issuing code, which file mode never needs.
    const { startKeeperFromSettings } = await import('../serving-cert/serving-cert-settings.js');
    const started = await startKeeperFromSettings(o.kubeConfig, o.servingCert ?? {}, logger, reloaded);
    keeper = started;
    stoppers.push(() => started.stop());
    keeper.attach(swap);
    tls = keeper.initialTls;
  }
  served(tls);

  // Metadata only, and of that only what admission and the copier read (./cached-namespace.ts).
  const namespaces = new Reflector<V1Namespace>({
    name: 'namespaces',
    listerWatcher: new KubeListWatch<V1Namespace>(o.kubeConfig, '/api/v1/namespaces', { metadataOnly: true }),
    transform: cachedNamespaceOf,
    logger: reflectorLogger,
  });
  namespaces.start();
  stoppers.push(() => namespaces.stop());

  const { reporter: statusReporter, revision } = await followConfig(o, {
    holder,
    logger,
    reflectorLogger,
    stoppers,
  });
  // The pull Secret and the bundle count in the set version: a change of either moves it.
  const recompute = (): void => {
    revision?.recompute();
  };

  // Whether the runtime can take the trust-bundle mount: probed before serving, so that no Pod
  // gets an empty volume over its CA certificates while the answer is still to come.
  const prober = s.capabilityProbe
    ? startCapabilityProber({
        access: o.kubeConfig,
        settings: s.capabilityProbe,
        logger: logger.child({ part: 'trust-capability' }),
      })
    : undefined;
  if (prober) {
    stoppers.push(() => {
      prober.stop();
    });
    if (statusReporter)
      prober.onChange((capability) => {
        statusReporter.trustBundle(capability);
      });
  }

  // Per-request warnings are rate-limited; a namespace the API server does not know is remembered.
  const logLimit = new LogRateLimit(logger);
  const missingNamespaces = new MissingNamespaces(o.missingNamespaces);
  const copiers = followPullSecret({
    kubeConfig: o.kubeConfig,
    core,
    namespaces,
    holder,
    metrics,
    logger,
    reflectorLogger,
    missingNamespaces,
    logLimit,
    excludedNamespaces: o.excludedNamespaces,
    onSourceChange: recompute,
  });
  stoppers.push(() => {
    logLimit.flush();
  });
  stoppers.push(() => copiers.close());
  // Copies of earlier pull-Secret names (a rename in the config) go once no live Pod names them.
  const sweeper = new RenamedCopySweeper({
    calls: renamedCopyCalls(o.kubeConfig, o.statusConfigMap),
    currentName: () => (holder.get() === undefined ? undefined : pullSecretRefOf(holder).name),
    metrics,
    logger: logger.child({ part: 'renamed-copies' }),
    resweepMs: o.renamedCopyResweepMs,
  });
  holder.onChange(() => {
    sweeper.follow();
  });
  sweeper.follow();
  stoppers.push(() => sweeper.stop());
  // The bundle in force: its hash is stamped on Pods at admission, and the restarter follows it.
  const bundle = followTrustBundle({
    kubeConfig: o.kubeConfig,
    holder,
    logger: reflectorLogger,
    // Another version than the probe found (an upgrade): probe again at once.
    onApi: (api) => {
      const known = prober?.current()?.api;
      if (known !== undefined && known !== (api.served ? api.apiVersion : API_NOT_SERVED)) prober?.refresh();
    },
    onSettled: recompute,
  });
  bundle.onChange(recompute);
  stoppers.push(() => bundle.close());
  // Both sides exist now: the revision reads the watches built after it (./set-revision.ts).
  revision?.connect(() => ({
    pullSecret: pullSecretPart(copiers, holder),
    trustBundle: bundle.settled() ? { known: true, version: bundle.current()?.contentVersion } : UNKNOWN_PART,
  }));

  // Started once this webhook serves and leads (below); admission asks it from the start.
  let preflight: Preflight | undefined;
  const context: AdmissionContext = {
    config: () => holder.get(),
    revision: () => holder.revision,
    knownMissing: (image) => preflight?.knownMissing(image) ?? false,
    namespaceAnnotations: namespaceAnnotationLookup(namespaces, core, missingNamespaces, logger, logLimit),
    pullSecret: {
      ensure: async (namespace, opts) => (await copiers.current?.copier.ensure(namespace, opts)) ?? false,
    },
    trustBundleHash: () => bundle.current()?.hash,
    trustBundleMount: () => trustBundleMount(prober?.current()),
    metrics,
    logger,
    logLimit,
    get failOpen() {
      return o.failOpen ?? holder.get()?.failOpen ?? true;
    },
  };
  const ready = (): boolean =>
    holder.get() !== undefined &&
    namespaces.hasSynced() &&
    (copiers.current?.secrets.hasSynced() ?? false) &&
    (keeper?.ready() ?? true) &&
    (prober === undefined || prober.current() !== undefined);
  const forwarder = s.drift
    ? new DriftForwarder({
        url: s.drift.url,
        tls: s.drift.tls,
        logger: logger.child({ part: 'drift-forwarder' }),
        registry,
      })
    : undefined;
  if (forwarder) stoppers.push(() => forwarder.stop());
  const server = new WebhookServer({
    validate: forwarder ? (body: Buffer) => handleDriftValidation(body, forwarder) : undefined,
    tls,
    host: o.host,
    port: o.port,
    context,
    // /metrics on the webhook's port unless it has one of its own.
    registry: o.metricsPort === undefined ? registry : undefined,
    ready,
    logger,
  });
  serverRef.current = server;
  const port = await server.listen();
  stoppers.push(() => server.close());
  const metricsServer =
    o.metricsPort === undefined
      ? undefined
      : new MetricsServer({ registry, port: o.metricsPort, host: o.host, logger });
  if (metricsServer) {
    const started = metricsServer;
    stoppers.push(() => started.close());
  }
  const metricsPort = await metricsServer?.listen();
  reloader?.start();
  if (reloader) {
    const started = reloader;
    stoppers.push(() => {
      started.stop();
    });
  }
  logger.info({ port }, 'webhook serving');
  // Only once we serve: until then upstream's webhook may still be the one answering.
  const cleanup = s.removeUpstreamLeftovers
    ? startUpstreamCleanup(o.kubeConfig, logger.child({ part: 'upstream-cleanup' }))
    : undefined;
  if (cleanup)
    stoppers.push(() => {
      cleanup.stop();
    });
  const restarter = o.trustRestart
    ? startRestarterFromSettings(o.trustRestart, { access: o.kubeConfig, bundle, registry, logger })
    : undefined;
  if (restarter) stoppers.push(() => restarter.stop());
  // Like the cleanup, only once we serve: a webhook that cannot start has nothing to attest. One
  // attestor per runtime is enough for the KCP: the replica that leads the trust restarter.
  const attestor = s.drift
    ? new RuntimeAttestor({
        url: s.drift.url,
        tls: s.drift.tls,
        access: o.kubeConfig,
        logger: logger.child({ part: 'attestor' }),
        registry,
        isActive: restarter ? () => restarter.isActive() : undefined,
        initialDelayMaxMs: s.drift.attestationInitialDelayMs,
      })
    : undefined;
  if (attestor) {
    attestor.start();
    stoppers.push(() => attestor.stop());
  }
  // What the Pods changed under each revision do, and whether a candidate's images resolve
  // (DESIGN §11): beside the status report, on the replica that leads the restarter.
  const statusConfigMap = o.statusConfigMap;
  if (statusConfigMap && restarter) {
    const isActive = (): boolean => restarter.isActive();
    const follower = startWorkloadFollower({
      access: o.kubeConfig,
      isActive,
      settings: () => workloadSettingsOf(holder.get()),
      inForce: () => {
        const config = holder.get();
        const revision = holder.revision;
        return config !== undefined && revision !== undefined
          ? { revision, overrides: config.overrides }
          : undefined;
      },
      namespace: statusConfigMap.namespace,
      configMapName: statusConfigMap.name,
      registry,
      logger: logger.child({ part: 'workloads' }),
      reflectorLogger,
    });
    stoppers.push(() => follower.stop());
    const started = startPreflight({
      access: o.kubeConfig,
      isActive,
      logger: logger.child({ part: 'preflight' }),
      namespace: statusConfigMap.namespace,
      statusConfigMap: statusConfigMap.name,
      registryServers: o.registryServers,
      excludedNamespaces: o.excludedNamespaces,
      // The set in force (the stable one while a candidate is checked): its overrides and Secret.
      stable: () => {
        const config = holder.get();
        if (config === undefined) return undefined;
        const ref = pullSecretRefOf(holder);
        const data = copiers.current?.secrets.store.get(`${ref.namespace}/${ref.name}`)?.data?.[
          '.dockerconfigjson'
        ];
        return {
          overrides: config.overrides,
          dockerConfigJson: data === undefined ? undefined : Buffer.from(data, 'base64').toString('utf8'),
        };
      },
    });
    preflight = started;
    stoppers.push(() => started.stop());
  }

  return {
    port,
    metricsPort,
    config: holder,
    registry,
    ready,
    isCertWriter: () => keeper?.isWriter() ?? false,
    restarter,
    async stop(drain) {
      cleanup?.stop();
      reloader?.stop();
      await server.close(drain);
      // Deliver what is queued before stopping (stop drops the rest).
      await forwarder?.flush(DRIFT_FLUSH_SECONDS * 1000).catch(() => undefined);
      // Everything else, last started first (the server again: already closed).
      await stoppers.stopAll(logger);
    },
  };
}
