/**
 * The interim mode (`--mode=annotate`): when the source set changes, mark every selected
 * Runtime with KIM's `force-patch-reconciliation` signal, once per set version.
 *
 * Two keyed queues drive it. `annotate-sources` (one key) evaluates the source set against the
 * state kept on the KCP (signal-decision.ts) after each coalesced change, at start and every
 * resync; it starts, resumes and completes passes. `annotate-runtimes` (one key per Runtime)
 * handles the Runtimes of the running pass: decide, patch, retry with backoff. The state is
 * persisted before a pass signals anyone and after it completed, so a restart or a new leader
 * neither signals the fleet again nor loses a change.
 */
import type { Runtime } from '../../api/runtime.js';
import { RUNTIME_GROUP, RUNTIME_PLURAL, RUNTIME_VERSION } from '../../api/runtime.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import { Reflector } from '../../kube/reflector.js';
import { PrometheusReconcileMetrics } from '../../kube/reconcile-metrics.js';
import { objectKey } from '../../kube/store.js';
import { WorkQueue } from '../../kube/work-queue.js';
import type { HandlerResult } from '../../kube/work-queue-options.js';
import { PrometheusWorkQueueMetrics } from '../../kube/workqueue-metrics.js';
import type { Logger } from '../../telemetry/logger.js';
import type { ModeContext, ModeHandle, ModeStarter } from '../mode.js';
import { Coalescer } from './coalescer.js';
import { RuntimeSignaller, SignalError } from './runtime-signaller.js';
import {
  decideRuntimeSignal,
  decideSourceAction,
  existedAt,
  signalPatch,
  type SignalPass,
  type SignalState,
} from './signal-decision.js';
import { SignalStateStore } from './signal-state-store.js';

/** The work-queue (and `controller` label) names of the two loops. */
export const SOURCES_CONTROLLER = 'annotate-sources';
export const RUNTIMES_CONTROLLER = 'annotate-runtimes';
const SOURCE_SET_KEY = 'source-set';

/** Leadership was lost or the mode is stopping: the write is not made. */
class NotLeaderError extends Error {
  override readonly name = 'NotLeaderError';
}

interface RunningPass extends SignalPass {
  readonly pending: Set<string>;
  readonly settled: Set<string>;
  readonly startedAt: number;
  signalled: number;
  skipped: number;
}

class AnnotateMode implements ModeHandle {
  private readonly runtimes: Reflector<Runtime>;
  private readonly sourceQueue: WorkQueue;
  private readonly runtimeQueue: WorkQueue;
  private readonly coalescer: Coalescer;
  private readonly store: SignalStateStore;
  private readonly signaller: RuntimeSignaller;
  private readonly log: Logger;
  private pass: RunningPass | undefined;
  private lastChangeAt: Date | undefined;
  private unsubscribe: (() => void) | undefined;
  private loops: Promise<void>[] = [];

  constructor(private readonly ctx: ModeContext) {
    const { kubeConfig, namespace, options, registry } = ctx;
    this.log = ctx.logger.child({ mode: 'annotate' });
    this.runtimes = new Reflector<Runtime>({
      name: `runtimes in ${namespace}`,
      listerWatcher: new KubeListWatch<Runtime>(
        kubeConfig,
        `/apis/${RUNTIME_GROUP}/${RUNTIME_VERSION}/namespaces/${namespace}/${RUNTIME_PLURAL}`,
      ),
      labelSelector: options.runtimeSelector,
      logger: this.log.child({ part: 'runtime-reflector' }),
    });
    const metrics = new PrometheusWorkQueueMetrics(registry);
    const reconcileMetrics = new PrometheusReconcileMetrics(registry);
    this.sourceQueue = new WorkQueue({ name: SOURCES_CONTROLLER, metrics, reconcileMetrics });
    this.runtimeQueue = new WorkQueue({ name: RUNTIMES_CONTROLLER, metrics, reconcileMetrics });
    this.coalescer = new Coalescer(() => {
      this.sourceQueue.add(SOURCE_SET_KEY);
    }, options.coalesceMs);
    this.store = new SignalStateStore(kubeConfig, namespace, options.stateConfigMapName);
    this.signaller = new RuntimeSignaller(kubeConfig);
  }

  async start(): Promise<void> {
    this.unsubscribe = this.ctx.sources.onChange(() => {
      this.lastChangeAt = new Date();
      this.coalescer.trigger();
    });
    this.runtimes.addEventHandler({
      onAdd: (rt) => {
        this.onRuntimeSeen(rt);
      },
      onDelete: (rt) => {
        const key = objectKey(rt);
        if (this.pass?.pending.has(key) === true) this.runtimeQueue.add(key);
      },
    });
    this.runtimes.start();
    await this.runtimes.waitForSync(this.ctx.signal);
    const onError = (controller: string) => (key: string, err: unknown) => {
      if (err instanceof NotLeaderError) return;
      this.log.warn({ controller, objectKey: key, err }, 'reconcile failed; retrying with backoff');
    };
    this.loops = [
      this.sourceQueue.start((key) => this.reconcileSources(key), { onError: onError(SOURCES_CONTROLLER) }),
      this.runtimeQueue.start((key) => this.reconcileRuntime(key), {
        concurrency: this.ctx.options.concurrency,
        onError: onError(RUNTIMES_CONTROLLER),
      }),
    ];
    // Level-based start: whatever changed while nobody was leading is found by comparing states.
    this.sourceQueue.add(SOURCE_SET_KEY);
    this.log.info(
      { runtimes: this.runtimes.store.size, selector: this.ctx.options.runtimeSelector ?? null },
      'annotate mode started',
    );
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    this.coalescer.cancel();
    this.sourceQueue.shutDown();
    this.runtimeQueue.shutDown();
    await Promise.all(this.loops);
    await this.runtimes.stop();
    this.signaller.close();
    this.pass = undefined;
    this.ctx.metrics.signalPending.set(0);
    this.log.info({}, 'annotate mode stopped');
  }

  private requireLeader(): void {
    if (!this.ctx.isLeader()) throw new NotLeaderError('not the leader');
  }

  /** A Runtime appeared (created, relisted, or selected by a relabel) while a pass runs. */
  private onRuntimeSeen(rt: Runtime): void {
    const pass = this.pass;
    if (!pass) return;
    const key = objectKey(rt);
    if (pass.pending.has(key) || pass.settled.has(key) || !existedAt(rt, pass.changeTime)) return;
    pass.pending.add(key);
    this.ctx.metrics.signalPending.set(pass.pending.size);
    this.runtimeQueue.add(key);
  }

  private async reconcileSources(key: string): Promise<HandlerResult> {
    const log = this.log.child({ controller: SOURCES_CONTROLLER, objectKey: key });
    this.requireLeader();
    const { state, resourceVersion } = await this.store.read();
    const snapshot = this.ctx.sources.snapshot();
    const action = decideSourceAction({
      snapshot,
      state,
      activePass: this.pass ? { version: this.pass.version, pending: this.pass.pending.size } : undefined,
      lastChangeAt: this.lastChangeAt,
      changePending: this.coalescer.pending(),
      now: new Date(),
    });
    switch (action.kind) {
      case 'hold':
        log.warn(
          { problems: action.problems.map((p) => ({ source: p.source, reason: p.reason })) },
          'a source is missing or invalid; nothing is signalled until it is fixed',
        );
        break;
      case 'baseline':
        this.requireLeader();
        await this.store.write(action.state, resourceVersion);
        this.showSignalled(action.state);
        log.info(
          { version: action.state.version, watched: action.state.watched ?? null },
          action.reason === 'first'
            ? 'no signal state yet; current sources recorded as signalled'
            : 'watched sources changed, their content did not; recorded as signalled',
        );
        break;
      case 'idle':
        this.showSignalled(action.state);
        break;
      case 'continue':
        // Runtimes left pending while a source was unusable get their turn again.
        for (const k of this.pass?.pending ?? []) this.runtimeQueue.add(k);
        break;
      case 'settling':
        break;
      case 'start':
        this.requireLeader();
        if (!action.resumed) await this.store.write(action.state, resourceVersion);
        this.beginPass(action.pass, action.resumed, log);
        break;
      case 'complete':
        this.requireLeader();
        await this.store.write(action.state, resourceVersion);
        this.completePass(action.state, log);
        break;
    }
    return { requeueAfter: this.ctx.options.resyncMs };
  }

  private beginPass(p: SignalPass, resumed: boolean, log: Logger): void {
    const pass: RunningPass = {
      ...p,
      pending: new Set(),
      settled: new Set(),
      startedAt: performance.now(),
      signalled: 0,
      skipped: 0,
    };
    this.pass = pass;
    for (const rt of this.runtimes.store.list()) {
      if (existedAt(rt, pass.changeTime)) pass.pending.add(objectKey(rt));
    }
    this.ctx.metrics.signalPasses.inc({ kind: resumed ? 'resumed' : 'new' });
    this.ctx.metrics.signalPending.set(pass.pending.size);
    log.info(
      {
        version: pass.version,
        changeTime: pass.changeTime.toISOString(),
        runtimes: pass.pending.size,
        resumed,
      },
      'signal pass started',
    );
    for (const key of pass.pending) this.runtimeQueue.add(key);
    if (pass.pending.size === 0) this.sourceQueue.add(SOURCE_SET_KEY);
  }

  private completePass(state: SignalState, log: Logger): void {
    const pass = this.pass;
    this.pass = undefined;
    this.showSignalled(state);
    const durationMs = pass ? Math.round(performance.now() - pass.startedAt) : 0;
    const signalled = pass?.signalled ?? 0;
    const skipped = pass?.skipped ?? 0;
    log.info({ version: state.version, signalled, skipped, durationMs }, 'signal pass completed');
    if (signalled > 0) {
      this.ctx.events.record({
        regarding: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          namespace: this.ctx.namespace,
          name: this.ctx.options.stateConfigMapName,
        },
        type: 'Normal',
        reason: 'RuntimesSignalled',
        action: 'Signal',
        note: `signalled ${signalled} Runtime(s) for source-set version ${state.version} (${skipped} skipped) in ${durationMs} ms`,
      });
    }
  }

  private showSignalled(state: SignalState): void {
    const m = this.ctx.metrics;
    m.signalledVersion.reset();
    m.signalledVersion.set({ version: state.version }, 1);
    const completed = state.completedAt !== undefined ? Date.parse(state.completedAt) : NaN;
    if (!Number.isNaN(completed)) m.lastSignalCompleted.set(completed / 1000);
  }

  private async reconcileRuntime(key: string): Promise<void> {
    const pass = this.pass;
    if (!pass?.pending.has(key)) return;
    this.requireLeader();
    // A source turned missing or invalid mid-pass: signalling now would make KIM propagate it.
    // The key stays pending; the evaluation after the fix resumes it.
    if (this.ctx.sources.problems().length > 0) return;
    const runtime = this.runtimes.store.get(key);
    const decision = decideRuntimeSignal(runtime, pass, this.ctx.options.signal);
    const log = this.log.child({ controller: RUNTIMES_CONTROLLER, objectKey: key });
    if (decision.kind === 'skip') {
      this.ctx.metrics.runtimesSkipped.inc({ reason: decision.reason });
      pass.skipped++;
      log.debug({ reason: decision.reason, version: pass.version }, 'runtime skipped');
      this.settle(pass, key);
      return;
    }
    const namespace = runtime?.metadata?.namespace ?? this.ctx.namespace;
    const name = runtime?.metadata?.name ?? key;
    try {
      await this.signaller.patch(namespace, name, signalPatch(pass.version, this.ctx.options.signal));
    } catch (err) {
      if (err instanceof SignalError && err.statusCode === 404) {
        this.ctx.metrics.runtimesSkipped.inc({ reason: 'gone' });
        this.settle(pass, key);
        return;
      }
      this.ctx.metrics.signalErrors.inc();
      throw err;
    }
    this.ctx.metrics.runtimesSignalled.inc();
    pass.signalled++;
    log.info({ version: pass.version, signal: this.ctx.options.signal }, 'runtime signalled');
    this.settle(pass, key);
  }

  private settle(pass: RunningPass, key: string): void {
    pass.pending.delete(key);
    pass.settled.add(key);
    if (this.pass !== pass) return;
    this.ctx.metrics.signalPending.set(pass.pending.size);
    if (pass.pending.size === 0) this.sourceQueue.add(SOURCE_SET_KEY);
  }
}

/** Starts the annotate mode; see the file comment. */
export const startAnnotateMode: ModeStarter = async (ctx) => {
  const mode = new AnnotateMode(ctx);
  try {
    await mode.start();
  } catch (err) {
    await mode.stop();
    throw err;
  }
  return mode;
};
