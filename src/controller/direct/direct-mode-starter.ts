import type { ModeContext, ModeHandle } from '../mode.js';
import { startDirectMode } from './direct-mode.js';
import type { DirectModeChoices } from './direct-mode-options.js';

/**
 * Direct mode's own settings as the controller app runs it: the fan-out's concurrency, resync
 * and coalescing window are the app's mode options (one value for either mode), so not here.
 */
export type DirectModeStarterSettings = Omit<DirectModeChoices, 'concurrency' | 'resyncMs' | 'coalesceMs'>;

/**
 * Adapts direct mode to the controller app's mode contract: runs only while this replica leads
 * (the app starts and stops it), with the app's sources, registry, logger and mode options.
 */
export function directModeStarter(
  settings: DirectModeStarterSettings,
): (ctx: ModeContext) => Promise<ModeHandle> {
  return async (ctx) => {
    const mode = await startDirectMode({
      kubeConfig: ctx.kubeConfig,
      namespace: ctx.namespace,
      sources: ctx.sources,
      logger: ctx.logger,
      registry: ctx.registry,
      ...settings,
      concurrency: ctx.options.concurrency,
      resyncMs: ctx.options.resyncMs,
      coalesceMs: ctx.options.coalesceMs,
    });
    return { stop: () => mode.stop() };
  };
}
