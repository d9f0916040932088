import type { ModeContext, ModeHandle } from '../mode.js';
import { startDirectMode } from './direct-mode.js';
import type { DirectModeOptions } from './direct-mode-options.js';

/** Direct-mode settings beyond the common mode options (the CLI's direct flags). */
export interface DirectModeSettings {
  readonly release: DirectModeOptions['release'];
  readonly autoCreateSelector?: string;
  readonly drift?: DirectModeOptions['drift'];
  readonly driftListener?: DirectModeOptions['driftListener'];
  readonly caRotation?: DirectModeOptions['caRotation'];
  readonly runtimeTimeoutMs?: number;
  readonly runtimeDeadlineMs?: number;
  readonly fullResyncEvery?: number;
  readonly servingPolicy?: DirectModeOptions['servingPolicy'];
  /** Work only this replica's share (`--sharding`); every runtime when undefined. */
  readonly shard?: DirectModeOptions['shard'];
  readonly rollout?: DirectModeOptions['rollout'];
  /** `--per-runtime-metrics`. */
  readonly perRuntimeMetrics?: boolean;
}

/**
 * Adapts direct mode to the controller app's mode contract: runs only while this replica leads
 * (the app starts and stops it), with the app's sources, registry and logger.
 */
export function directModeStarter(settings: DirectModeSettings): (ctx: ModeContext) => Promise<ModeHandle> {
  return async (ctx) => {
    const mode = await startDirectMode({
      kubeConfig: ctx.kubeConfig,
      namespace: ctx.namespace,
      sources: ctx.sources,
      logger: ctx.logger,
      registry: ctx.registry,
      release: settings.release,
      concurrency: ctx.options.concurrency,
      resyncMs: ctx.options.resyncMs,
      coalesceMs: ctx.options.coalesceMs,
      ...(settings.autoCreateSelector !== undefined
        ? { autoCreateSelector: settings.autoCreateSelector }
        : {}),
      ...(settings.drift ? { drift: settings.drift } : {}),
      ...(settings.driftListener ? { driftListener: settings.driftListener } : {}),
      ...(settings.caRotation ? { caRotation: settings.caRotation } : {}),
      ...(settings.runtimeTimeoutMs !== undefined ? { runtimeTimeoutMs: settings.runtimeTimeoutMs } : {}),
      runtimeDeadlineMs: settings.runtimeDeadlineMs,
      ...(settings.fullResyncEvery !== undefined ? { fullResyncEvery: settings.fullResyncEvery } : {}),
      ...(settings.servingPolicy ? { servingPolicy: settings.servingPolicy } : {}),
      ...(settings.shard ? { shard: settings.shard } : {}),
      ...(settings.rollout ? { rollout: settings.rollout } : {}),
      perRuntimeMetrics: settings.perRuntimeMetrics === true,
    });
    return { stop: () => mode.stop() };
  };
}
