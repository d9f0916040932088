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
import { LeaderTerm } from './leader-term.js';
import type { ModeOptions, ModeStarter } from './mode.js';
import { part, PartGroup } from '../process/part-group.js';
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
 * Reads top to bottom: the settings, then each part after what it uses, added to one group that
 * starts them in that order and stops them in reverse: the sources, the probes' server, and the
 * leader election that runs the mode's terms.
 */
export async function startControllerApp(o: ControllerAppOptions): Promise<ControllerApp> {
  const s = resolveControllerAppSettings(o);
  const logger = o.logger.child({ controller: o.mode });
  if (o.manifestsConfigMapName !== undefined && o.mode !== 'annotate')
    logger.warn({ mode: o.mode }, 'the manifests ConfigMap is ignored: only annotate mode watches it');
  const registry = o.registry ?? new Registry();
  if (!o.registry) collectDefaultMetrics({ register: registry });
  const metrics = createControllerMetrics(registry);
  const parts = new PartGroup('controller', logger);
  // /healthz: told by the mode's terms when one failed to start or to stop in time.
  let unhealthy: string | undefined;

  const events = createEventRecorder({
    kubeConfig: o.kubeConfig,
    namespace: o.namespace,
    reportingController: 'rt-bootstrapper.kyma-project.io/controller',
    reportingInstance: s.identity.slice(0, 128),
    logger,
  });
  const eventsPart = parts.add(part('events', { stop: () => events.flush() }));

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
  // Settles once the sources listed (in the background: the probes' server listens meanwhile).
  let synced: Promise<void> | undefined;
  let detachSourceExpiry: (() => void) | undefined;
  const sourcesPart = parts.add(
    part('sources', {
      needs: [eventsPart],
      start: () => {
        synced = sources.start();
        detachSourceExpiry = attachSourceExpiryMetrics(registry, () => sources.snapshot());
      },
      stop: async () => {
        await sources.stop();
        detachSourceExpiry?.();
      },
    }),
  );

  const server = probesServer({
    healthy: () => unhealthy,
    ready: () => sources.synced(),
    registry,
    logger,
  });
  let port = s.port;
  const serverPart = parts.add(
    part('probes server', {
      start: async () => {
        port = await listen(server, s.port, s.host);
      },
      stop: () => closeServer(server),
    }),
  );

  // The mode's terms: one started on winning the Lease (or at once without election), stopped on losing it.
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
  let stopping = false;
  const isLeader = (): boolean => !stopping && (elector ? elector.isLeader() : true);
  const term = new LeaderTerm({
    sources,
    starter: o.starter,
    context: (signal) => ({
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
      signal,
    }),
    stopTimeoutMs: s.modeStopTimeoutMs,
    unhealthy: (reason) => {
      unhealthy = reason;
    },
    logger,
  });
  parts.add(
    part('leader election', {
      needs: [sourcesPart, serverPart],
      // Stands for election (or runs the mode) once the sources synced, in the background.
      start: () => {
        synced?.then(
          () => {
            if (stopping) return;
            if (elector)
              elector.start({
                onStartedLeading: () => {
                  term.start();
                },
                onStoppedLeading: () => term.stop(),
              });
            else term.start();
          },
          (err: unknown) => {
            if (!stopping) logger.error({ err }, 'the sources could not be watched');
          },
        );
      },
      // The elector stops the mode before it releases the Lease, so no standby starts early.
      stop: async () => {
        stopping = true;
        await elector?.stop();
        await term.stop();
      },
    }),
  );

  await parts.start();
  logger.info(
    { port, identity: s.identity, mode: o.mode, leaderElection: elector !== undefined },
    'controller serving',
  );
  return {
    port,
    identity: s.identity,
    registry,
    sources,
    isLeader: () => term.running() && isLeader(),
    ready: () => sources.synced(),
    healthy: () => unhealthy === undefined,
    synced: () => synced ?? Promise.reject(new Error('the sources were not started')),
    async stop() {
      await parts.stop();
      logger.info({}, 'controller stopped');
    },
  };
}

/** The probes' and scrapes' server: /healthz (a problem's text, or ok), /readyz, /metrics. */
function probesServer(o: {
  readonly healthy: () => string | undefined;
  readonly ready: () => boolean;
  readonly registry: Registry;
  readonly logger: Logger;
}): http.Server {
  // Probes and scrapes only: a client slow to send its request, or idle, is not held for long.
  const serverTimeouts = { headersTimeout: 10_000, requestTimeout: 15_000, keepAliveTimeout: 65_000 };
  return http.createServer(serverTimeouts, (req, res) => {
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
      const problem = o.healthy();
      if (problem === undefined) reply(200, 'ok\n');
      else reply(500, `${problem}\n`);
    } else if (path === '/readyz') {
      if (o.ready()) reply(200, 'ok\n');
      else reply(503, 'sources not synced\n');
    } else if (path === '/metrics') {
      answerMetrics(o.registry, res, o.logger);
    } else {
      reply(404, 'not found\n');
    }
  });
}

/** Listens; resolves the port (the one picked when `port` is 0). */
function listen(server: http.Server, port: number, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address();
      resolve(typeof addr === 'object' && addr !== null ? addr.port : port);
    });
  });
}

/** Closes the server and every connection it holds. */
function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  return new Promise<void>((resolve) => {
    server.close(() => {
      resolve();
    });
  });
}
