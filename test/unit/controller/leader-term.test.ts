import { KubeConfig } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { ModeContext, ModeHandle } from '../../../src/controller/mode.js';
import { createControllerMetrics } from '../../../src/controller/controller-metrics.js';
import { nullEventRecorder } from '../../../src/kube/event-recorder.js';
import { LeaderTerm, startLeaderTerm } from '../../../src/controller/leader-term.js';
import type { SourceSnapshot, SourceWatcher } from '../../../src/controller/sources/source-watcher.js';
import { KubeApiError } from '../../../src/kube/kube-errors.js';
import { Reflector } from '../../../src/kube/reflector.js';
import { createLogger } from '../../../src/telemetry/logger.js';
import { ScriptedListerWatcher, obj, type Obj } from '../kube/scripted-lister-watcher.js';

function context(signal: AbortSignal): ModeContext {
  const registry = new Registry();
  return {
    kubeConfig: new KubeConfig(),
    namespace: 'kcp-system',
    sources: undefined as unknown as SourceWatcher, // startLeaderTerm gets its sources explicitly
    logger: createLogger({ level: 'silent' }),
    registry,
    metrics: createControllerMetrics(registry),
    events: nullEventRecorder,
    isLeader: () => true,
    options: {
      signal: 'annotation',
      coalesceMs: 10,
      concurrency: 1,
      resyncMs: 60_000,
      stateConfigMapName: 'state',
    },
    identity: 'test',
    signal,
  };
}

/** A snapshot whose version is the resourceVersion of the one cached object. */
function snapshotOf(reflector: Reflector<Obj>): SourceSnapshot {
  const version = reflector.store.get('ns/a')?.metadata.resourceVersion ?? 'missing';
  return {
    versions: { pullSecret: version, clusterTrustBundle: undefined, configMap: undefined },
    version,
    problems: [],
  };
}

const idleMode: ModeHandle = { stop: () => Promise.resolve() };

void describe('startLeaderTerm', () => {
  void test('a replica that won the Lease after a partition starts the mode on the current sources, not its stale cache', async () => {
    const server = { rv: 1 };
    const lw = new ScriptedListerWatcher<Obj>(() => ({
      items: [obj('a', String(server.rv))],
      resourceVersion: String(server.rv),
    }));
    const reflector = new Reflector<Obj>({
      name: 'pull secret',
      listerWatcher: lw,
      backoff: { baseMs: 60_000, maxMs: 60_000, jitter: 0 },
    });
    reflector.start();
    await reflector.waitForSync();
    // The partition: the watch breaks and the reflector backs off for a minute; meanwhile the
    // other replica led and the source changed.
    (await lw.watchNo(0)).fail(new KubeApiError('connection refused'));
    server.rv = 2;
    assert.equal(snapshotOf(reflector).version, '1', 'the cache is stale');

    const sources = {
      relist: (s?: AbortSignal) => reflector.relist(s),
      snapshot: () => snapshotOf(reflector),
    };
    const seen: string[] = [];
    const t0 = Date.now();
    await startLeaderTerm(
      sources,
      (ctx) => {
        assert.equal(ctx.signal.aborted, false);
        seen.push(sources.snapshot().version);
        return Promise.resolve(idleMode);
      },
      context(new AbortController().signal),
    );
    assert.deepEqual(seen, ['2'], 'the mode saw only the version the API server holds');
    assert.ok(Date.now() - t0 < 5_000, 'the backoff did not delay the new term');
    await reflector.stop();
  });

  void test('leadership lost while the sources are relisted: the mode never starts', async () => {
    const ac = new AbortController();
    let started = false;
    const sources = {
      // A relist that cannot finish (the API server is unreachable again) until the signal aborts.
      relist: (s?: AbortSignal) =>
        new Promise<void>((_resolve, reject) => {
          s?.addEventListener('abort', () => {
            reject(new Error('relist aborted', { cause: s.reason }));
          });
        }),
      snapshot: (): SourceSnapshot => ({
        versions: { pullSecret: undefined, clusterTrustBundle: undefined, configMap: undefined },
        version: 'v',
        problems: [],
      }),
    };
    const term = startLeaderTerm(
      sources,
      () => {
        started = true;
        return Promise.resolve(idleMode);
      },
      context(ac.signal),
    );
    ac.abort(new Error('leadership lost'));
    await assert.rejects(term, /relist aborted/);
    assert.equal(started, false);
  });
});

void describe('LeaderTerm', () => {
  const sources = {
    relist: () => Promise.resolve(),
    snapshot: (): SourceSnapshot => ({
      versions: { pullSecret: undefined, clusterTrustBundle: undefined, configMap: undefined },
      version: 'v',
      problems: [],
    }),
  };

  void test('a mode that does not stop within the limit makes the process unhealthy; one that stops does not', async () => {
    const problems: string[] = [];
    const term = (stop: () => Promise<void>): LeaderTerm =>
      new LeaderTerm({
        sources,
        starter: () => Promise.resolve({ stop }),
        context,
        stopTimeoutMs: 50,
        unhealthy: (reason) => problems.push(reason),
        logger: createLogger({ level: 'silent' }),
      });
    const prompt = term(() => Promise.resolve());
    prompt.start();
    assert.equal(prompt.running(), true);
    await prompt.stop();
    assert.equal(prompt.running(), false);
    assert.deepEqual(problems, []);
    const stuck = term(() => new Promise<void>(() => undefined));
    stuck.start();
    // Started (not aborted while starting), then stuck in its stop.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await stuck.stop();
    assert.equal(problems.length, 1);
    assert.match(String(problems[0]), /longer than 50 ms/);
  });

  void test('a mode that fails to start makes the process unhealthy, unless the term ended first', async () => {
    const problems: string[] = [];
    const failing = new LeaderTerm({
      sources,
      starter: () => Promise.reject(new Error('no')),
      context,
      stopTimeoutMs: 1_000,
      unhealthy: (reason) => problems.push(reason),
      logger: createLogger({ level: 'silent' }),
    });
    failing.start();
    await failing.stop();
    assert.deepEqual(problems, [], 'aborted by the stop: not a failure');
    failing.start();
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(problems, ['the mode failed to start']);
    await failing.stop();
  });
});
