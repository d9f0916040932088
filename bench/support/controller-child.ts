// The KCP controller in direct mode as its own process, so that its memory and CPU are its own:
// the source watcher and direct mode exactly as `src/local/kcp-landscape.ts` wires them, plus a
// plain-HTTP endpoint on loopback for the benchmark (`/readyz`, `/metrics`, `/state`, and
// `/metadata-look…`: the KCP-side look of ./metadata-look.ts, from this process).
//
//   node controller-child.js <config.json>    (see ControllerChildConfig)
//
// Instrumentation (this process only, no product code changed): every HTTPS request and every
// new TLS connection is counted per destination port, so the benchmark can tell how many
// requests and handshakes a runtime costs. `/state` answers them with the current source-set
// version and the process's memory; `/gc` runs a full collection when node has --expose-gc.
// The child exits when its parent is gone.
import { KubeConfig } from '@kubernetes/client-node';
import { readdirSync, readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { startDirectMode } from '../../src/controller/direct/direct-mode.js';
import type { DirectModeOptions } from '../../src/controller/direct/direct-mode-options.js';
import { createSourceWatcher } from '../../src/controller/sources/source-set.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { driftListenerOptions } from '../../test/support/drift-listener-options.js';
import { MetadataLooks } from './metadata-look.js';
import { childConfig, runChild } from './child-main.js';

/** What the parent asks for. */
export interface ControllerChildConfig {
  readonly kubeconfigPath: string;
  /** Loopback port of this child's HTTP endpoint. */
  readonly port: number;
  readonly namespace: string;
  readonly pullSecretName: string;
  readonly clusterTrustBundleName: string;
  readonly configMapName: string;
  /** Direct mode's fan-out concurrency (undefined: its default). */
  readonly concurrency?: number;
  /** Direct mode's coalescing window (undefined: its default). */
  readonly coalesceMs?: number;
  /** 0 disables the periodic resync. */
  readonly resyncMs: number;
  readonly runtimeTimeoutMs?: number;
  readonly release: { readonly image: string; readonly version: string };
  /** The drift channel with its listener in this process; off when undefined. */
  readonly drift?: {
    readonly listenerPort: number;
    readonly rateLimit?: { readonly perSecond: number; readonly burst: number };
  };
  readonly logLevel: string;
  /** Follow this RolloutPolicy (progressive rollout; off when undefined). */
  readonly rollout?: { readonly policyName: string };
  /** Sharded direct mode: this replica's identity and the timing of its Lease (off when undefined). */
  readonly shard?: {
    readonly identity: string;
    readonly timing?: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number };
  };
}

/** What `/state` answers. */
export interface ControllerChildState {
  readonly version: string;
  readonly rssKib: number;
  readonly hwmKib: number;
  /** V8 heap in use and memory outside the heap (buffers, TLS), from process.memoryUsage(). */
  readonly heapUsedKib: number;
  /** V8 heap committed (used and free). */
  readonly heapTotalKib: number;
  readonly externalKib: number;
  /** HTTPS requests sent, by destination port. */
  readonly requests: Record<string, number>;
  /** TLS connections opened, by destination port. */
  readonly tlsConnections: Record<string, number>;
  /** HTTPS requests by `kcp|runtime METHOD path` (runtime names in paths as `rt-*`). */
  readonly requestPaths: Record<string, number>;
  /** Event-loop delay since the last `/reset-event-loop` (ms): p99 and maximum. */
  readonly eventLoopP99Ms: number;
  readonly eventLoopMaxMs: number;
  /** Garbage collections since the same reset: how many, their pauses' sum and the longest (ms). */
  readonly gcCount: number;
  readonly gcPauseTotalMs: number;
  readonly gcPauseMaxMs: number;
  /** Open file descriptors (sockets, mostly). */
  readonly openFds: number;
}

const requests = new Map<string, number>();
const tlsConnections = new Map<string, number>();
const requestPaths = new Map<string, number>();
let kcpPort = '';
const bump = (m: Map<string, number>, key: unknown): void => {
  const k = typeof key === 'string' || typeof key === 'number' ? String(key) : '?';
  m.set(k, (m.get(k) ?? 0) + 1);
};

interface RequestOptionsLike {
  port?: unknown;
  method?: unknown;
  path?: unknown;
  pathname?: unknown;
}

/** Destination port, method and path of an `https.request(...)` call. */
function describeRequest(args: unknown[]): { port: string; method: string; path: string } {
  const [first, second] = args;
  const text = (v: unknown, fallback: string): string =>
    typeof v === 'string' || typeof v === 'number' ? String(v) : fallback;
  let url: URL | undefined;
  if (first instanceof URL) url = first;
  else if (typeof first === 'string') url = URL.canParse(first) ? new URL(first) : undefined;
  const options = (url ? second : first) as RequestOptionsLike | undefined;
  const port = url ? url.port : text(options?.port, '?');
  const method = text(options?.method, 'GET').toUpperCase();
  const path = (url ? url.pathname : text(options?.pathname ?? options?.path, '?')).split('?')[0] ?? '?';
  return { port, method, path: path.replace(/\/rt-\d+/g, '/rt-*') };
}

// Counting wrappers around the module objects that node-fetch (client-node) and https.Agent
// look the functions up on at call time.
const originalRequest = https.request.bind(https) as (...args: unknown[]) => http.ClientRequest;
(https as unknown as { request: (...args: unknown[]) => http.ClientRequest }).request = (...args) => {
  const r = describeRequest(args);
  bump(requests, r.port);
  bump(requestPaths, `${r.port === kcpPort ? 'kcp' : 'runtime'} ${r.method} ${r.path}`);
  return originalRequest(...args);
};
const originalConnect = tls.connect.bind(tls) as (...args: unknown[]) => tls.TLSSocket;
(tls as unknown as { connect: (...args: unknown[]) => tls.TLSSocket }).connect = (...args) => {
  const [first, second] = args;
  const options = (typeof first === 'object' ? first : second) as { port?: unknown } | undefined;
  bump(tlsConnections, typeof first === 'number' ? first : options?.port);
  return originalConnect(...args);
};

// A CPU profiler on demand (/profile/start, /profile/stop), for the benchmark's BENCH_PROFILE.
const profiler = new Session();
profiler.connect();

// Event-loop delay at 10 ms resolution, as perf_hooks measures it (the p99 figure).
const eventLoop = monitorEventLoopDelay({ resolution: 10 });
eventLoop.enable();
// The collector's pauses over the same window: how much of the loop's delay they are.
const collections = { count: 0, totalMs: 0, maxMs: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    collections.count += 1;
    collections.totalMs += entry.duration;
    collections.maxMs = Math.max(collections.maxMs, entry.duration);
  }
}).observe({ entryTypes: ['gc'] });

function openFds(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return 0;
  }
}

function memory(): {
  rssKib: number;
  hwmKib: number;
  heapUsedKib: number;
  heapTotalKib: number;
  externalKib: number;
} {
  const status = readFileSync('/proc/self/status', 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  const m = process.memoryUsage();
  return {
    rssKib: field('VmRSS'),
    hwmKib: field('VmHWM'),
    heapUsedKib: Math.round(m.heapUsed / 1024),
    heapTotalKib: Math.round(m.heapTotal / 1024),
    externalKib: Math.round(m.external / 1024),
  };
}

async function main(): Promise<void> {
  const c = childConfig('controller-child.js') as ControllerChildConfig;
  const logger = createLogger({ name: 'controller', level: c.logLevel });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(c.kubeconfigPath);
  kcpPort = new URL(kubeConfig.getCurrentCluster()?.server ?? 'https://x').port;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const sources = createSourceWatcher({
    kubeConfig,
    namespace: c.namespace,
    pullSecretName: c.pullSecretName,
    clusterTrustBundleName: c.clusterTrustBundleName,
    configMapName: c.configMapName,
    logger,
  });
  await sources.start();
  const options: DirectModeOptions = {
    kubeConfig,
    namespace: c.namespace,
    sources,
    logger,
    registry,
    release: c.release,
    resyncMs: c.resyncMs,
    ...(c.concurrency !== undefined ? { concurrency: c.concurrency } : {}),
    ...(c.coalesceMs !== undefined ? { coalesceMs: c.coalesceMs } : {}),
    ...(c.runtimeTimeoutMs !== undefined ? { runtimeTimeoutMs: c.runtimeTimeoutMs } : {}),
    ...(c.drift ? driftListenerOptions(c.drift.listenerPort, { rateLimit: c.drift.rateLimit }) : {}),
    ...(c.rollout ? { rollout: { policyName: c.rollout.policyName, autoRollback: true } } : {}),
    ...(c.shard
      ? { shard: { identity: c.shard.identity, ...(c.shard.timing ? { timing: c.shard.timing } : {}) } }
      : {}),
  };
  const direct = await startDirectMode(options);
  const looks = new MetadataLooks();

  const server = http.createServer((req, res) => {
    void (async () => {
      if (req.url === '/readyz') {
        res.writeHead(200).end('ok');
      } else if (req.url === '/metrics') {
        res.writeHead(200, { 'content-type': registry.contentType }).end(await registry.metrics());
      } else if (req.url === '/gc') {
        // Only with --expose-gc: a full collection, to tell live memory from garbage.
        const gc = (globalThis as { gc?: () => void }).gc;
        if (gc) {
          gc();
          gc();
        }
        res.writeHead(gc ? 200 : 501).end();
      } else if (req.url === '/profile/start') {
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.start');
        res.writeHead(200).end();
      } else if (req.url === '/profile/stop') {
        // The CPU profile since /profile/start, as a .cpuprofile (Chrome DevTools) JSON.
        const { profile } = (await profiler.post('Profiler.stop')) as { profile: unknown };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(profile));
      } else if (req.url === '/resync') {
        direct.resyncAll();
        res.writeHead(200).end();
      } else if (req.url === '/periodic-resync') {
        // One period of the timer's resync: attested runtimes skipped, except their share.
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(direct.periodicResync()));
      } else if (req.url?.startsWith('/metadata-look') === true) {
        const answer = await looks.handle(req);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      } else if (req.url === '/reset-event-loop') {
        eventLoop.reset();
        Object.assign(collections, { count: 0, totalMs: 0, maxMs: 0 });
        res.writeHead(200).end();
      } else if (req.url === '/state') {
        const state: ControllerChildState = {
          version: sources.snapshot().version,
          ...memory(),
          requests: Object.fromEntries(requests),
          tlsConnections: Object.fromEntries(tlsConnections),
          requestPaths: Object.fromEntries(requestPaths),
          eventLoopP99Ms: eventLoop.percentile(99) / 1e6,
          eventLoopMaxMs: eventLoop.max / 1e6,
          gcCount: collections.count,
          gcPauseTotalMs: collections.totalMs,
          gcPauseMaxMs: collections.maxMs,
          openFds: openFds(),
        };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(state));
      } else {
        res.writeHead(404).end();
      }
    })().catch((error: unknown) => {
      res.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(c.port, '127.0.0.1', resolve));
  logger.info({ port: c.port }, 'bench controller child ready');

  let stopping = false;
  const stop = (why: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'stopping');
    const hard = setTimeout(() => process.exit(1), 10_000);
    hard.unref();
    void (async () => {
      server.close();
      await direct.stop();
      await sources.stop();
      process.exit(0);
    })();
  };
  process.once('SIGTERM', () => {
    stop('SIGTERM');
  });
  process.once('SIGINT', () => {
    stop('SIGINT');
  });
  // Never outlive the benchmark (its registry kills us by PID; this covers a SIGKILLed parent).
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) stop('parent gone');
  }, 1_000).unref();
}

runChild('controller child failed', main);
