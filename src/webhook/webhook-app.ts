/**
 * `rtb webhook`, wired top to bottom: the admission path (serving certificate, caches, config,
 * pull-Secret copier, trust bundle, server) and the runtime agent (../runtime-agent/), each part
 * built with what it needs and started by one group (../process/part-group.ts) in that order,
 * stopped in reverse.
 */
import type { V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { RUNTIME_NAMESPACE } from '../api/runtime-names.js';
import { DRIFT_FLUSH_SECONDS } from '../api/serving-limits.js';
import { API_NOT_SERVED, trustBundleMount } from '../api/trust-bundle-capability.js';
import { DriftForwarder } from '../drift/drift-forwarder.js';
import { handleDriftValidation } from '../drift/validation-handler.js';
import { cachedNamespaceOf } from '../kube/cached-namespace.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import type { LeaderElectionTiming } from '../kube/leader-election-timing.js';
import { KubeListWatch } from '../kube/list-watch.js';
import { Reflector } from '../kube/reflector.js';
import { part, PartGroup } from '../process/part-group.js';
import {
  attestorPart,
  PreflightParts,
  SweeperParts,
  workloadFollowerPart,
} from '../runtime-agent/agent-parts.js';
import {
  agentIdentity,
  RUNTIME_AGENT_LEASE,
  RuntimeAgent,
  type LeaderPart,
} from '../runtime-agent/runtime-agent.js';
import {
  trustRestarterOf,
  type TrustRestartSettings,
} from '../runtime-agent/trust-restart/restarter-settings.js';
import type { TrustRestarter } from '../runtime-agent/trust-restart/trust-restarter.js';
import { followTrustBundle } from '../runtime-agent/trust-restart/trust-bundle-follower.js';
import { DEFAULT_RESTART_PACING } from '../runtime-agent/trust-restart/trust-restarter.js';
import { EscapedPods } from '../runtime-agent/escaped-pods/escaped-pods.js';
import { AdmissionPolicyInstaller } from '../runtime-agent/admission-policy/admission-policy-installer.js';
import { RegistryCaches } from '../runtime-agent/registry-caches/registry-caches.js';
import { startUpstreamCleanup, type UpstreamCleanup } from '../runtime-agent/upstream-cleanup.js';
import { workloadSettingsOf } from '../runtime-agent/workload-health/workload-follower.js';
import type { ServingCertSettings } from '../serving-cert/serving-cert-settings.js';
import { errorLine } from '../telemetry/error-line.js';
import { LogRateLimit } from '../telemetry/log-rate-limit.js';
import { MetricsServer } from '../telemetry/metrics-endpoint.js';
import type { AdmissionContext } from './admission-handler.js';
import type { CertificateFiles } from './certificate-reloader.js';
import { configSource, type ConfigSourceSettings } from './config-following.js';
import { ConfigHolder } from './config-holder.js';
import { coreCalls } from './core-calls.js';
import { MissingNamespaces, type MissingNamespacesOptions } from './missing-namespaces.js';
import { namespaceAnnotationLookup } from './namespace-lookup.js';
import { followPullSecret, pullSecretPart, pullSecretRefOf } from './pull-secret-follower.js';
import { ServingCertificate } from './serving-certificate.js';
import { UNKNOWN_PART } from './set-revision.js';
import { capabilityProber, type CapabilityProbeSettings } from './trust-capability/capability-prober.js';
import { NodeKubelets, trustCapability } from './trust-capability/node-kubelets.js';
import { followRuntimeConfig } from './runtime-config.js';
import { createWebhookMetrics } from './webhook-metrics.js';
import { WebhookServer, type DrainOptions } from './webhook-server.js';
import type { TlsMinVersion } from '../api/tls-min-version.js';
import type { ClientTlsFiles } from '../drift/reloading-tls-agent.js';

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
  /** The oldest TLS version the server and the drift client accept (`--tls-min-version`; default 1.3). */
  readonly tlsMinVersion?: TlsMinVersion;
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
   * still named are looked at again (../runtime-agent/pull-secret/renamed-copy-sweeper.ts; default 10 min).
   */
  readonly renamedCopyResweepMs?: number;
  /** Restart Pods that run an old trust bundle (docs/trust-restart.md); off without it. */
  readonly trustRestart?: TrustRestartSettings;
  /**
   * The runtime agent's election (../runtime-agent/runtime-agent.ts; namespace default
   * `POD_NAMESPACE` or kyma-system, Lease `rt-bootstrapper-trust-restarter`).
   */
  readonly runtimeAgent?: {
    readonly namespace?: string;
    readonly leaseName?: string;
    readonly leaseTiming?: Partial<LeaderElectionTiming>;
    readonly identity?: string;
  };
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
   * the runtime agent.
   */
  readonly registryServers?: Readonly<Record<string, string>>;
  /**
   * The count of escaped Pods (../runtime-agent/escaped-pods/, on the agent's leader; default:
   * every 5 minutes, no repair); false or an interval of 0: never counted.
   */
  readonly escapedPods?:
    | {
        readonly intervalMs?: number;
        /** Restart the owners of escaped Pods (`--repair-escaped`). */
        readonly repair?: boolean;
        /** A repair's restart not rolled out after this is reported (default 10 min). */
        readonly repairDeadlineMs?: number;
        readonly repairPollMs?: number;
      }
    | false;
  /**
   * Customers' registry caches on the runtime (../runtime-agent/registry-caches/; every replica
   * looks, default every minute, the agent's leader reports); false: never looked at, none known.
   */
  readonly registryCaches?: { readonly intervalMs?: number } | false;
  /**
   * The admission policy (../runtime-agent/admission-policy/, on the agent's leader): where the
   * runtime serves MutatingAdmissionPolicy, the agent installs it from the config loaded here
   * with `install` (KIM's manifests), else only reports the path (direct mode: the KCP installs
   * it). Absent or false: never looked at.
   */
  readonly admissionPolicy?:
    | {
        readonly intervalMs?: number;
        /** Whether the agent installs the policy (default false: it reports only). */
        readonly install?: boolean;
      }
    | false;
}

/** A running webhook process: the admission server and the runtime agent. */
export interface WebhookApp {
  readonly port: number;
  /** The metrics port, when {@link WebhookAppOptions.metricsPort} is set. */
  readonly metricsPort?: number;
  readonly config: ConfigHolder;
  readonly registry: Registry;
  ready(): boolean;
  /** Whether this replica writes the serving certificate now (only without {@link WebhookAppOptions.tls}). */
  isCertWriter(): boolean;
  /** The runtime agent (its leader runs the parts besides admission). */
  readonly agent: RuntimeAgent;
  /** The trust-bundle restarter, a part of the agent (only with {@link WebhookAppOptions.trustRestart}). */
  readonly restarter: TrustRestarter | undefined;
  /**
   * Graceful: the agent stops (its Lease released for a standby), the server drains
   * (./webhook-server.ts `close`; by default without the delay that the CLI adds on SIGTERM),
   * then every other part, last started first.
   */
  stop(drain?: DrainOptions): Promise<void>;
}

/**
 * Starts the webhook; resolves once serving. A start that fails (no usable certificate, an
 * unreadable config file, the port in use) stops whatever it had started and rejects with the
 * reason on one line, so the process can exit.
 */
export async function startWebhookApp(o: WebhookAppOptions): Promise<WebhookApp> {
  const wired = wireWebhookApp(o);
  try {
    await wired.group.start();
  } catch (error) {
    throw new Error(`cannot start the webhook: ${errorLine(error)}`, { cause: error });
  }
  o.logger.info({ port: wired.server.port }, 'webhook serving');
  return {
    port: wired.server.port,
    metricsPort: wired.metricsPort(),
    config: wired.holder,
    registry: wired.registry,
    ready: wired.ready,
    isCertWriter: () => wired.certificate.isWriter(),
    agent: wired.agent,
    restarter: wired.restarter,
    async stop(drain) {
      wired.shutdown.drain = drain;
      await wired.group.stop();
    },
  };
}

/** {@link WebhookAppOptions} with every default applied: what the webhook reads besides the config's source. */
interface WebhookAppSettings {
  /** The webhook's own namespace (`POD_NAMESPACE`, else kyma-system). */
  readonly namespace: string;
  /** How the trust-bundle capability is probed (its namespace filled in); undefined: never, the bundle is always mounted. */
  readonly capabilityProbe: CapabilityProbeSettings | undefined;
  readonly removeUpstreamLeftovers: boolean;
  /** The drift channel: the listener and this runtime's client certificate files; undefined: off. */
  readonly drift:
    | {
        readonly url: string;
        readonly tls: ClientTlsFiles;
        readonly attestationInitialDelayMs: number | undefined;
      }
    | undefined;
  /** The runtime agent's election. */
  readonly agent: {
    readonly namespace: string;
    readonly leaseName: string;
    readonly identity: string;
    readonly timing: Partial<LeaderElectionTiming> | undefined;
  };
}

/** Applies the webhook's defaults: the only place they are filled in. */
function resolveWebhookAppSettings(o: WebhookAppOptions): WebhookAppSettings {
  const namespace = process.env.POD_NAMESPACE || RUNTIME_NAMESPACE;
  return {
    namespace,
    capabilityProbe: o.trustCapability === false ? undefined : { namespace, ...o.trustCapability },
    removeUpstreamLeftovers: o.removeUpstreamLeftovers ?? true,
    drift: o.drift
      ? {
          url: o.drift.url,
          tls: {
            certFile: o.drift.certFile,
            keyFile: o.drift.keyFile,
            caFile: o.drift.caFile,
            minVersion: o.tlsMinVersion,
          },
          attestationInitialDelayMs: o.drift.attestationInitialDelayMs,
        }
      : undefined,
    agent: {
      namespace: o.runtimeAgent?.namespace ?? namespace,
      // An empty name or identity reads as none: the default.
      leaseName: o.runtimeAgent?.leaseName || RUNTIME_AGENT_LEASE,
      identity: o.runtimeAgent?.identity || agentIdentity(),
      timing: o.runtimeAgent?.leaseTiming,
    },
  };
}

/**
 * Builds every part, each after what it uses, into one group (nothing starts here). The order is
 * the start order: the serving certificate first (a webhook with nothing to serve fails before
 * any watch), the caches and the config, the capability probe (before serving: no Pod gets an
 * empty volume over its CA certificates while the answer is still to come), the pull-Secret
 * copier and the trust bundle, the drift forwarder, the server; then what acts only once this
 * webhook serves: upstream's clean-up and the runtime agent.
 */
function wireWebhookApp(o: WebhookAppOptions) {
  const s = resolveWebhookAppSettings(o);
  const logger = o.logger;
  const reflectorLogger = logger.child({ part: 'reflector' });
  const registry = o.registry ?? new Registry();
  if (!o.registry) collectDefaultMetrics({ register: registry });
  const metrics = createWebhookMetrics(registry);
  const core = coreCalls(o.kubeConfig);
  const holder = new ConfigHolder(logger.child({ part: 'config' }), metrics, o.landscape);
  const group = new PartGroup('webhook', logger);
  const shutdown: { drain?: DrainOptions } = {};

  const certificate = group.add(
    new ServingCertificate({
      access: o.kubeConfig,
      tls: o.tls,
      servingCert: o.servingCert,
      metrics,
      logger,
    }),
  );

  // Metadata only, and of that only what admission and the copier read (../kube/cached-namespace.ts).
  const namespaces = new Reflector<V1Namespace>({
    name: 'namespaces',
    listerWatcher: new KubeListWatch<V1Namespace>(o.kubeConfig, '/api/v1/namespaces', { metadataOnly: true }),
    transform: cachedNamespaceOf,
    logger: reflectorLogger,
  });
  group.add(
    part('namespaces', {
      start: () => {
        namespaces.start();
      },
      stop: () => namespaces.stop(),
    }),
  );

  // The drift channel to the KCP (built here, before the report that tells it of new trust-bundle
  // findings; stopped after the server drained, see its part below).
  const forwarder = s.drift
    ? new DriftForwarder({
        url: s.drift.url,
        tls: s.drift.tls,
        logger: logger.child({ part: 'drift-forwarder' }),
        registry,
      })
    : undefined;

  // The pull Secret and the bundle count in the set version (./set-revision.ts): the revision
  // reads their watches, built below, and they tell it when they change. Neither runs before the
  // group starts, after all three exist.
  const config = group.add(
    configSource(o, {
      holder,
      logger,
      reflectorLogger,
      setParts: () => ({
        pullSecret: pullSecretPart(copiers, holder),
        trustBundle: bundle.settled()
          ? { known: true, version: bundle.current()?.contentVersion }
          : UNKNOWN_PART,
      }),
      kcp: forwarder,
    }),
  );
  const recompute = (): void => {
    config.revision?.recompute();
  };

  // Hosts with a customer's registry cache: admission reads them on every replica (registryCaches: leave).
  const caches =
    o.registryCaches === false
      ? undefined
      : new RegistryCaches({
          access: o.kubeConfig,
          logger,
          config: () => holder.get(),
          statusConfigMap: o.statusConfigMap,
          intervalMs: o.registryCaches?.intervalMs,
        });
  if (caches) {
    group.add(caches.part);
    holder.onChange(() => {
      caches.refresh();
    });
  }
  // What admission and the escaped-Pod count apply: the config less what is left to a cache.
  const onRuntime = followRuntimeConfig(holder, caches);

  const prober = s.capabilityProbe
    ? capabilityProber({
        access: o.kubeConfig,
        settings: s.capabilityProbe,
        logger: logger.child({ part: 'trust-capability' }),
      })
    : undefined;
  // The nodes' kubelets: where one cannot read the version served, no mount (docs/trust-bundle-api.md).
  const nodeKubelets = prober ? new NodeKubelets(o.kubeConfig, reflectorLogger) : undefined;
  const capability = prober
    ? trustCapability(prober, nodeKubelets, logger.child({ part: 'trust-capability' }))
    : undefined;
  if (prober && capability) {
    const reporter = config.reporter;
    if (reporter)
      capability.onChange((found) => {
        reporter.trustBundle(found);
      });
    group.add(
      part('trust-capability probe', {
        start: () => {
          nodeKubelets?.start();
          prober.start();
        },
        stop: async () => {
          prober.stop();
          await nodeKubelets?.stop();
        },
      }),
    );
  }

  // Per-request warnings are rate-limited; a namespace the API server does not know is remembered.
  const logLimit = new LogRateLimit(logger);
  group.add(
    part('log rate limit', {
      stop: () => {
        logLimit.flush();
      },
    }),
  );
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
  group.add(part('pull-secret copier', { stop: () => copiers.close() }));

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
  group.add(part('trust bundle', { stop: () => bundle.close() }));

  // The forwarder's part here, in the order: it stops after the server drained.
  if (forwarder)
    group.add(
      part('drift forwarder', {
        // After the server drained: deliver what is queued (stop drops the rest).
        stop: async () => {
          await forwarder.flush(DRIFT_FLUSH_SECONDS * 1000).catch(() => undefined);
          await forwarder.stop();
        },
      }),
    );

  // /metrics on a port of its own (before the server, so it stops after the drain).
  const metricsServer =
    o.metricsPort === undefined
      ? undefined
      : new MetricsServer({ registry, port: o.metricsPort, host: o.host, logger });
  let metricsPort: number | undefined;
  if (metricsServer)
    group.add(
      part('metrics server', {
        start: async () => {
          metricsPort = await metricsServer.listen();
        },
        stop: () => metricsServer.close(),
      }),
    );

  // The agent's findings admission reads (every replica asks; only the leader's check knows).
  const preflight =
    o.statusConfigMap === undefined
      ? undefined
      : new PreflightParts({
          access: o.kubeConfig,
          logger: logger.child({ part: 'preflight' }),
          namespace: o.statusConfigMap.namespace,
          statusConfigMap: o.statusConfigMap.name,
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
              overrideExclusions: config.overrideExclusions,
              dockerConfigJson: data === undefined ? undefined : Buffer.from(data, 'base64').toString('utf8'),
            };
          },
        });

  const context: AdmissionContext = {
    config: onRuntime,
    revision: () => holder.revision,
    knownMissing: (image) => preflight?.knownMissing(image) ?? false,
    namespaceAnnotations: namespaceAnnotationLookup(namespaces, core, missingNamespaces, logger, logLimit),
    pullSecret: {
      ensure: async (namespace, opts) => (await copiers.current?.copier.ensure(namespace, opts)) ?? false,
    },
    trustBundleHash: () => bundle.current()?.hash,
    trustBundleMount: () => trustBundleMount(capability?.current()),
    metrics,
    logger,
    logLimit,
    get failOpen() {
      return o.failOpen ?? holder.get()?.failOpen ?? true;
    },
  };
  const ready = (): boolean =>
    holder.get() !== undefined &&
    (caches?.looked() ?? true) &&
    namespaces.hasSynced() &&
    (copiers.current?.secrets.hasSynced() ?? false) &&
    certificate.ready() &&
    (capability === undefined || capability.current() !== undefined);
  const server = new WebhookServer({
    validate: forwarder ? (body: Buffer) => handleDriftValidation(body, forwarder) : undefined,
    tls: certificate,
    host: o.host,
    port: o.port,
    minVersion: o.tlsMinVersion,
    context,
    // /metrics on the webhook's port unless it has one of its own.
    registry: o.metricsPort === undefined ? registry : undefined,
    ready,
    logger,
  });
  const serving = group.add(
    part('admission server', {
      needs: [certificate, config],
      start: async () => {
        await server.listen();
      },
      stop: () => server.close(shutdown.drain),
    }),
  );

  // Only once we serve: until then upstream's webhook may still be the one answering.
  if (s.removeUpstreamLeftovers) {
    const cleanupLogger = logger.child({ part: 'upstream-cleanup' });
    let cleanup: UpstreamCleanup | undefined;
    group.add(
      part('upstream clean-up', {
        needs: [serving],
        start: () => {
          cleanup = startUpstreamCleanup(o.kubeConfig, cleanupLogger);
        },
        stop: () => {
          cleanup?.stop();
        },
      }),
    );
  }

  // The runtime agent: what acts for the runtime besides admission, on the replica that leads.
  const restarter = o.trustRestart
    ? trustRestarterOf(o.trustRestart, {
        access: o.kubeConfig,
        bundle,
        registry,
        logger,
        namespace: s.agent.namespace,
        identity: s.agent.identity,
      })
    : undefined;
  const sweeper = new SweeperParts({
    access: o.kubeConfig,
    statusConfigMap: o.statusConfigMap,
    currentName: () => (holder.get() === undefined ? undefined : pullSecretRefOf(holder).name),
    onConfigChange: (listener) => {
      holder.onChange(listener);
    },
    metrics,
    logger: logger.child({ part: 'renamed-copies' }),
    resweepMs: o.renamedCopyResweepMs,
  });
  const leaderParts: LeaderPart[] = [sweeper.leaderPart];
  if (caches) leaderParts.push(caches.leaderPart);
  if (restarter) leaderParts.push(restarter.leaderPart);
  if (s.drift)
    leaderParts.push(
      attestorPart({
        url: s.drift.url,
        tls: s.drift.tls,
        access: o.kubeConfig,
        registry,
        logger: logger.child({ part: 'attestor' }),
        initialDelayMaxMs: s.drift.attestationInitialDelayMs,
      }),
    );
  // What the Pods changed under each revision do, and whether a candidate's images resolve
  // (DESIGN §11): beside the status report.
  if (o.statusConfigMap && preflight)
    leaderParts.push(
      workloadFollowerPart({
        access: o.kubeConfig,
        settings: () => workloadSettingsOf(holder.get()),
        inForce: () => {
          const config = holder.get();
          const revision = holder.revision;
          return config !== undefined && revision !== undefined
            ? { revision, overrides: config.overrides }
            : undefined;
        },
        namespace: o.statusConfigMap.namespace,
        configMapName: o.statusConfigMap.name,
        registry,
        logger: logger.child({ part: 'workloads' }),
        reflectorLogger,
      }),
      preflight.leaderPart,
    );
  // Pods admitted while no webhook answered (it fails open): counted, and repaired when asked.
  // An interval of 0 (`--escaped-interval 0`) switches the count off, as false does.
  if (o.escapedPods !== false && o.escapedPods?.intervalMs !== 0) {
    const e = o.escapedPods ?? {};
    leaderParts.push(
      new EscapedPods({
        access: o.kubeConfig,
        registry,
        logger,
        config: onRuntime,
        revision: () => holder.revision,
        webhookNamespace: s.namespace,
        namespaceAnnotations: (name) => namespaces.store.get(name)?.metadata?.annotations,
        trustBundleMount: () => trustBundleMount(capability?.current()),
        statusConfigMap: o.statusConfigMap,
        intervalMs: e.intervalMs,
        repair:
          e.repair === true
            ? { deadlineMs: e.repairDeadlineMs ?? DEFAULT_RESTART_PACING.deadlineMs, pollMs: e.repairPollMs }
            : undefined,
      }).leaderPart,
    );
  }
  // The admission policy: installed by the agent where told to (KIM's runtimes), from
  // the very config, revision, bundle and capability admission uses; its path reported.
  const policy = o.admissionPolicy;
  if (policy !== undefined && policy !== false) {
    const installer = new AdmissionPolicyInstaller({
      access: o.kubeConfig,
      logger,
      installsHere: policy.install === true,
      statusConfigMap: o.statusConfigMap,
      intervalMs: policy.intervalMs,
      loaded: () => {
        const known = bundle.current();
        const found = capability?.current();
        return {
          config: holder.get(),
          revision: holder.revision,
          trustBundle: known === undefined ? undefined : { name: known.name, hash: known.hash },
          // Only where the webhook's own probe found the projection kept (else the webhook mounts).
          trustBundleMount:
            found !== undefined && found.projection === 'kept' && trustBundleMount(found).mount,
          namespace: s.agent.namespace,
        };
      },
    });
    const refresh = (): void => {
      installer.refresh();
    };
    holder.onChange(refresh);
    bundle.onChange(refresh);
    capability?.onChange(refresh);
    leaderParts.push(installer.leaderPart);
  }
  const agent = group.add(
    new RuntimeAgent({
      access: o.kubeConfig,
      election: s.agent,
      parts: leaderParts,
      logger,
      needs: [serving],
    }),
  );

  return {
    group,
    holder,
    registry,
    certificate,
    server,
    agent,
    restarter,
    ready,
    shutdown,
    metricsPort: () => metricsPort,
  };
}
