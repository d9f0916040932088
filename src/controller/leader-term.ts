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
