/**
 * The start of one leadership term. Every replica keeps its source cache warm, but a replica
 * that was cut off from the API server may win the Lease back while its watches still lag
 * behind (a reflector backing off after the partition has not seen what changed meanwhile).
 * Acting on that cache would re-signal, or re-apply, an old source version. So the mode starts
 * only once the sources were listed again after the term began: a fresh list proves the cache
 * at least as new as the API server's state when the Lease was won. The mode's own caches
 * (Runtimes, RuntimeBootstrappers, kubeconfig Secrets) are made by the mode at each start, so
 * their first list is fresh already.
 */
import type { Logger } from '../telemetry/logger.js';
import type { ModeContext, ModeHandle, ModeStarter } from './mode.js';
import type { SourceWatcher } from './sources/source-watcher.js';

/**
 * Relists the sources, then starts the mode with `ctx`. Rejects without starting it when
 * `ctx.signal` aborts (leadership lost or stopping) before the sources are current.
 */
export async function startLeaderTerm(
  sources: Pick<SourceWatcher, 'relist' | 'snapshot'>,
  starter: ModeStarter,
  ctx: ModeContext,
): Promise<ModeHandle> {
  await sources.relist(ctx.signal);
  ctx.signal.throwIfAborted();
  ctx.logger.info({ version: sources.snapshot().version }, 'sources listed again for the new term');
  return starter(ctx);
}

/** What a {@link LeaderTerm} reads. */
export interface LeaderTermOptions {
  readonly sources: Pick<SourceWatcher, 'relist' | 'snapshot'>;
  readonly starter: ModeStarter;
  /** The mode's context for a term, with the signal aborted when the term ends. */
  readonly context: (signal: AbortSignal) => ModeContext;
  /** How long stopping the mode may take before the process is unhealthy. */
  readonly stopTimeoutMs: number;
  /** Told when the mode failed to start or to stop in time (/healthz fails from then on). */
  readonly unhealthy: (reason: string) => void;
  readonly logger: Logger;
}

/**
 * The mode's runs, one per leadership term: {@link LeaderTerm.start} on winning the Lease (or at
 * once without election) starts the mode in the background once the sources are current,
 * {@link LeaderTerm.stop} on losing it aborts a start under way and stops the mode, within
 * `stopTimeoutMs`.
 */
export class LeaderTerm {
  private current: { handle: Promise<ModeHandle | undefined>; abort: AbortController } | undefined;

  constructor(private readonly o: LeaderTermOptions) {}

  /** Whether a term runs (the mode started or starting). */
  running(): boolean {
    return this.current !== undefined;
  }

  /** Begins a term: the mode starts once the sources were listed again. */
  start(): void {
    const abort = new AbortController();
    const handle = startLeaderTerm(this.o.sources, this.o.starter, this.o.context(abort.signal)).catch(
      (err: unknown) => {
        if (!abort.signal.aborted) {
          this.o.logger.error({ err }, 'the mode failed to start');
          this.o.unhealthy('the mode failed to start');
        }
        return undefined;
      },
    );
    this.current = { handle, abort };
  }

  /** Ends the term: aborts a start under way, stops the mode (unhealthy if that takes too long). */
  async stop(): Promise<void> {
    const current = this.current;
    this.current = undefined;
    if (!current) return;
    current.abort.abort();
    const limit = this.o.stopTimeoutMs;
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
      this.o.unhealthy(`stopping the mode took longer than ${limit} ms`);
      this.o.logger.error({ limitMs: limit }, 'the mode did not stop in time; failing /healthz');
    }
  }
}
