/**
 * `rtb controller`: watches the sources, serves /healthz, /readyz and /metrics over plain
 * HTTP, and runs one mode (annotate or direct) on the leader only.
 *
 * Leadership: every replica watches the sources and is ready once they synced; only the Lease
 * holder runs the mode, started once the sources were listed again after the Lease was won
 * (leader-term.ts: a cache from before a partition must not be acted on). On losing the Lease
 * the mode is stopped at once (its `isLeader()` turns false before the Lease can expire for
 * others) and the process stands for election again; the mode is level-based, so a new term
 * starts from the cluster's state. If stopping the mode hangs, /healthz fails so the kubelet
 * restarts the container.
 */
import http from 'node:http';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { LeaderElector } from '../kube/leader-election.js';
import { type LeaderElectionTiming } from '../kube/leader-election-timing.js';
import type { Logger } from '../telemetry/logger.js';
import { answerMetrics } from '../telemetry/metrics-endpoint.js';
import { createControllerMetrics } from './controller-metrics.js';
import { createEventRecorder } from '../kube/event-recorder.js';
import { startLeaderTerm } from './leader-term.js';
import type { ModeContext, ModeHandle, ModeOptions, ModeStarter } from './mode.js';
import { createSourceWatcher } from './sources/source-set.js';
import { attachSourceExpiryMetrics } from './expiry/source-expiry.js';
import type { SourceWatcher } from './sources/source-watcher.js';

/** Settings of {@link startControllerApp}. */
export interface ControllerAppOptions {
  readonly kubeConfig: KubeConfig;
  /** Namespace of the sources, the Runtimes, the Lease and the state (`kcp-system`). */
  readonly namespace: string;
  readonly pullSecretName: string;
  readonly clusterTrustBundleName?: string;
  readonly configMapName: string;
  readonly configMapKey?: string;
  /**
   * KIM's manifests ConfigMap: watched in annotate mode only (direct mode installs its own
   * release, and a problem of KIM's manifests must not hold it); not watched when undefined.
   */
  readonly manifestsConfigMapName?: string;
  /** The mode's name (logs, and which sources it watches). */
  readonly mode: string;
  /** Starts the mode (annotate's, or direct's built from its settings). */
  readonly starter: ModeStarter;
  readonly modeOptions: ModeOptions;
  /** false runs the mode in this process unconditionally (one replica, tests). */
  readonly leaderElection:
    false | { readonly leaseName: string; readonly timing?: Partial<LeaderElectionTiming> };
  readonly host?: string;
  /** HTTP port of /healthz, /readyz, /metrics (0 picks a free one). */
  readonly port?: number;
  readonly identity?: string;
  readonly logger: Logger;
  /** A registry of your own (default: a new one with the process metrics). */
  readonly registry?: Registry;
  /** How long stopping the mode may take before /healthz fails (default 60 s). */
  readonly modeStopTimeoutMs?: number;
}

/** A running controller process. */
export interface ControllerApp {
  readonly port: number;
  readonly identity: string;
  readonly registry: Registry;
  readonly sources: SourceWatcher;
  /** Whether this process runs the mode now. */
  isLeader(): boolean;
  /** /readyz: the sources have synced. */
  ready(): boolean;
  /** /healthz. */
  healthy(): boolean;
  /** Resolves once the sources synced (rejects if they never can, e.g. stopped first). */
  synced(): Promise<void>;
  /** Graceful: stops the mode, releases the Lease, stops the watches and the server. */
  stop(): Promise<void>;
}

/** The default identity: `<pod name or hostname>_<uuid>`, as client-go's. */
export function defaultIdentity(): string {
  return `${process.env.POD_NAME ?? hostname()}_${randomUUID()}`;
}

/** {@link ControllerAppOptions} with every default applied: what the app reads. */
interface ControllerAppSettings {
  readonly identity: string;
  readonly host: string;
  readonly port: number;
  readonly modeStopTimeoutMs: number;
  /** The Lease, or undefined: the mode runs here unconditionally. */
  readonly election:
    { readonly leaseName: string; readonly timing?: Partial<LeaderElectionTiming> } | undefined;
  /** KIM's manifests ConfigMap when watched (annotate mode only). */
  readonly manifestsConfigMapName: string | undefined;
}

/** Applies the app's defaults: the only place they are filled in. */
function resolveControllerAppSettings(o: ControllerAppOptions): ControllerAppSettings {
  return {
    identity: o.identity ?? defaultIdentity(),
    host: o.host ?? '0.0.0.0',
    port: o.port ?? 8080,
    modeStopTimeoutMs: o.modeStopTimeoutMs ?? 60_000,
    election: o.leaderElection === false ? undefined : o.leaderElection,
    manifestsConfigMapName: o.mode === 'annotate' ? o.manifestsConfigMapName : undefined,
  };
}

/**
 * Starts the controller; resolves once the HTTP server listens (sources sync in the background).
 * Reads top to bottom: the settings, the parts each after what it uses, the mode's term, the
 * probes' server, then the start.
 */
export async function startControllerApp(o: ControllerAppOptions): Promise<ControllerApp> {
  const s = resolveControllerAppSettings(o);
  const logger = o.logger.child({ controller: o.mode });
  if (o.manifestsConfigMapName !== undefined && o.mode !== 'annotate')
    logger.warn({ mode: o.mode }, 'the manifests ConfigMap is ignored: only annotate mode watches it');
  const registry = o.registry ?? new Registry();
  if (!o.registry) collectDefaultMetrics({ register: registry });
  const metrics = createControllerMetrics(registry);
  const events = createEventRecorder({
    kubeConfig: o.kubeConfig,
    namespace: o.namespace,
    reportingController: 'rt-bootstrapper.kyma-project.io/controller',
    reportingInstance: s.identity.slice(0, 128),
    logger,
  });
  const sources = createSourceWatcher({
    kubeConfig: o.kubeConfig,
    namespace: o.namespace,
    pullSecretName: o.pullSecretName,
    clusterTrustBundleName: o.clusterTrustBundleName,
    configMapName: o.configMapName,
    configMapKey: o.configMapKey,
    manifestsConfigMapName: s.manifestsConfigMapName,
    logger: logger.child({ part: 'sources' }),
    metrics,
    events,
  });
  const detachSourceExpiry = attachSourceExpiryMetrics(registry, () => sources.snapshot());
  const election = s.election;
  const elector = election
    ? new LeaderElector({
        kubeConfig: o.kubeConfig,
        namespace: o.namespace,
        name: election.leaseName,
        identity: s.identity,
        timing: election.timing,
        logger,
        onStatus: (leading) => {
          metrics.leaderStatus.set({ name: election.leaseName }, leading ? 1 : 0);
        },
      })
    : undefined;
  if (election) metrics.leaderStatus.set({ name: election.leaseName }, 0);

  // The mode's term: started on winning the Lease (or at once without election), stopped on losing it.
  let unhealthy: string | undefined;
  let stopping = false;
  let mode: { handle: Promise<ModeHandle | undefined>; abort: AbortController } | undefined;
  const isLeader = (): boolean => !stopping && (elector ? elector.isLeader() : true);
  const startMode = (): void => {
    const abort = new AbortController();
    const ctx: ModeContext = {
      kubeConfig: o.kubeConfig,
      namespace: o.namespace,
      sources,
      logger,
      registry,
      metrics,
      events,
      isLeader,
      options: o.modeOptions,
      identity: s.identity,
      signal: abort.signal,
    };
    const handle = startLeaderTerm(sources, o.starter, ctx).catch((err: unknown) => {
      if (!abort.signal.aborted) {
        logger.error({ err }, 'the mode failed to start');
        unhealthy = 'the mode failed to start';
      }
      return undefined;
    });
    mode = { handle, abort };
  };
  const stopMode = async (): Promise<void> => {
    const current = mode;
    mode = undefined;
    if (!current) return;
    current.abort.abort();
    const limit = s.modeStopTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => {
        resolve('timeout');
      }, limit);
    });
    const stopped = current.handle.then(async (h) => {
      await h?.stop();
      return 'stopped' as const;
    });
    const outcome = await Promise.race([stopped, timedOut]).finally(() => {
      clearTimeout(timer);
    });
    if (outcome === 'timeout') {
      unhealthy = `stopping the mode took longer than ${limit} ms`;
      logger.error({ limitMs: limit }, 'the mode did not stop in time; failing /healthz');
    }
  };

  // Probes and scrapes only: a client slow to send its request, or idle, is not held for long.
  const serverTimeouts = { headersTimeout: 10_000, requestTimeout: 15_000, keepAliveTimeout: 65_000 };
  const server = http.createServer(serverTimeouts, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (code: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(code, { 'Content-Type': type });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      reply(405, 'method not allowed\n');
      return;
    }
    if (path === '/healthz') {
      if (unhealthy === undefined) reply(200, 'ok\n');
      else reply(500, `${unhealthy}\n`);
    } else if (path === '/readyz') {
      if (sources.synced()) reply(200, 'ok\n');
      else reply(503, 'sources not synced\n');
    } else if (path === '/metrics') {
      answerMetrics(registry, res, logger);
    } else {
      reply(404, 'not found\n');
    }
  });

  // Started: the sources, then (once synced) the election or the mode; then the probes listen.
  const syncedPromise = sources.start();
  // Observed here so a failed sync is never an unhandled rejection; callers see it via synced().
  syncedPromise.then(
    () => {
      if (stopping) return;
      if (elector) {
        elector.start({
          onStartedLeading: () => {
            startMode();
          },
          onStoppedLeading: stopMode,
        });
      } else {
        startMode();
      }
    },
    (err: unknown) => {
      if (!stopping) logger.error({ err }, 'the sources could not be watched');
    },
  );

  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(s.port, s.host, () => {
      const addr = server.address();
      resolve(typeof addr === 'object' && addr !== null ? addr.port : s.port);
    });
  });
  logger.info(
    { port, identity: s.identity, mode: o.mode, leaderElection: elector !== undefined },
    'controller serving',
  );

  return {
    port,
    identity: s.identity,
    registry,
    sources,
    isLeader: () => mode !== undefined && isLeader(),
    ready: () => sources.synced(),
    healthy: () => unhealthy === undefined,
    synced: () => syncedPromise,
    async stop() {
      stopping = true;
      // The elector stops the mode before it releases the Lease, so no standby starts early.
      if (elector) await elector.stop();
      await stopMode();
      await sources.stop();
      detachSourceExpiry();
      await events.flush();
      server.closeAllConnections();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
      logger.info({}, 'controller stopped');
    },
  };
}
