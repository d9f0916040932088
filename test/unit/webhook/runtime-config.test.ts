import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FEATURE_ALTER_IMG_REGISTRY } from '../../../src/api/webhook-features.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { ConfigHolder } from '../../../src/webhook/config-holder.js';
import { followRuntimeConfig, type CachedHostsSource } from '../../../src/webhook/runtime-config.js';

const OVERRIDES = { 'replace.me': 'ghcr.io', 'quay.io': 'mirror.io/quay' };
const text = (registryCaches?: string): string =>
  JSON.stringify({ overrides: OVERRIDES, availableFeatures: [FEATURE_ALTER_IMG_REGISTRY], registryCaches });

/** The registry caches as the derivation sees them: hosts set by the test, a look fired by it. */
class FakeCaches implements CachedHostsSource {
  hosts: ReadonlySet<string> = new Set();
  private readonly listeners: (() => void)[] = [];
  cachedRegistries(): ReadonlySet<string> {
    return this.hosts;
  }
  onLook(listener: () => void): void {
    this.listeners.push(listener);
  }
  look(hosts: readonly string[]): void {
    this.hosts = new Set(hosts);
    for (const l of this.listeners) l();
  }
}

describe('the config on the runtime (followRuntimeConfig)', () => {
  test('none before a config; a new config is derived at once, with the hosts known then', () => {
    const holder = new ConfigHolder(silentLogger());
    const caches = new FakeCaches();
    caches.hosts = new Set(['replace.me']);
    const onRuntime = followRuntimeConfig(holder, caches);
    assert.equal(onRuntime(), undefined);
    holder.offer(text('leave'), 'test');
    assert.deepEqual(onRuntime()?.overrides, { 'quay.io': 'mirror.io/quay' });
    holder.offer(text('rewrite'), 'test');
    assert.equal(onRuntime(), holder.get(), 'without "leave" the config itself');
  });

  test('a look that changed the hosts is derived at once', () => {
    const holder = new ConfigHolder(silentLogger());
    const caches = new FakeCaches();
    holder.offer(text('leave'), 'test');
    const onRuntime = followRuntimeConfig(holder, caches);
    assert.equal(onRuntime(), holder.get(), 'no cached host: the config itself');
    caches.look(['quay.io']);
    assert.deepEqual(onRuntime()?.overrides, { 'replace.me': 'ghcr.io' });
    caches.look([]);
    assert.equal(onRuntime(), holder.get());
  });

  test('one object between changes, not one per call (the rewriter is kept per overrides object)', () => {
    const holder = new ConfigHolder(silentLogger());
    const caches = new FakeCaches();
    caches.hosts = new Set(['replace.me']);
    const onRuntime = followRuntimeConfig(holder, caches);
    holder.offer(text('leave'), 'test');
    assert.equal(onRuntime(), onRuntime());
  });

  test('where no caches are looked for: the config itself', () => {
    const holder = new ConfigHolder(silentLogger());
    holder.offer(text('leave'), 'test');
    const onRuntime = followRuntimeConfig(holder, undefined);
    assert.equal(onRuntime(), holder.get());
  });
});
