/**
 * The config as admission applies it on this runtime (../mutation/pipeline.ts `configOnRuntime`:
 * with `registryCaches: "leave"`, without the overrides of hosts a customer's registry cache
 * serves), derived when the config or the cached hosts change, not per Pod: the pipeline keeps its
 * image rewriter per overrides object, and the escaped-Pod count reads the same object.
 */
import type { WebhookConfig } from '../api/webhook-config.js';
import { configOnRuntime } from '../mutation/pipeline.js';
import type { RegistryCaches } from '../runtime-agent/registry-caches/registry-caches.js';
import type { ConfigHolder } from './config-holder.js';

/** What the derivation reads of the runtime's registry caches. */
export type CachedHostsSource = Pick<RegistryCaches, 'cachedRegistries' | 'onLook'>;

/** The config on this runtime, kept derived from `holder` and `caches` (none: the config itself). */
export function followRuntimeConfig(
  holder: ConfigHolder,
  caches: CachedHostsSource | undefined,
): () => WebhookConfig | undefined {
  let onRuntime: WebhookConfig | undefined;
  const derive = (): void => {
    const config = holder.get();
    onRuntime = config === undefined ? undefined : configOnRuntime(config, caches?.cachedRegistries());
  };
  derive();
  holder.onChange(derive);
  caches?.onLook(derive);
  return () => onRuntime;
}
