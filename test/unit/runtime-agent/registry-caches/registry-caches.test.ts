/**
 * Customers' registry caches, the pure decisions: which objects name a cached host, the bounds of
 * what is kept and reported, the config field, what the webhook and `rtb mutate` leave to a cache,
 * and the KCP's condition and `rtb status` (docs/registry-caches.md).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  MAX_HOST_CHARS,
  MAX_REPORTED_HOSTS,
  readRegistryCaches,
  REGISTRY_CACHES_KEY,
  writeRegistryCaches,
  type RegistryCachesReport,
} from '../../../../src/api/registry-caches.js';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import { ConfigError, parseWebhookConfig, readWebhookConfig } from '../../../../src/api/webhook-config.js';
import { FEATURE_ALTER_IMG_REGISTRY } from '../../../../src/api/webhook-features.js';
import { readReport } from '../../../../src/api/webhook-status.js';
import { PreviewInputError, previewMutation } from '../../../../src/cli/mutate-preview.js';
import {
  recordRegistryCaches,
  registryCacheCondition,
} from '../../../../src/controller/direct/registry-cache-status.js';
import { StatusBuilder } from '../../../../src/controller/direct/status-builder.js';
import { fleetStatus, formatFleetStatus } from '../../../../src/controller/rollout/fleet-status.js';
import { cachedSourcesOf, overridesLeaving } from '../../../../src/image/cached-registries.js';
import { configOnRuntime, mutatePod } from '../../../../src/mutation/pipeline.js';
import {
  AdmissionPolicyConfigError,
  admissionPolicyParamData,
} from '../../../../src/render/admission-policy-params.js';
import type { Pod } from '../../../../src/mutation/pod.js';
import {
  cachedHostOf,
  CachedHostTally,
  cachesReportOf,
  MAX_TRACKED_HOSTS,
} from '../../../../src/runtime-agent/registry-caches/cache-hosts.js';

/** A RegistryCacheConfig as KIM's module serves it (kyma-project/registry-cache, v1beta1). */
const cacheConfig = (upstream: unknown, state: unknown = 'Ready', extra: Record<string, unknown> = {}) => ({
  apiVersion: 'core.kyma-project.io/v1beta1',
  kind: 'RegistryCacheConfig',
  metadata: { name: 'c', namespace: 'team', ...extra },
  spec: { upstream },
  status: { state },
});

const OVERRIDES = {
  'replace.me': 'ghcr.io',
  'index.docker.io': 'mirror.io/hub',
  'quay.io': 'mirror.io/quay',
};

const report = (over: Partial<RegistryCachesReport> = {}): RegistryCachesReport => ({
  api: 'core.kyma-project.io/v1beta1',
  hosts: ['docker.io', 'replace.me'],
  more: 0,
  rewritten: ['replace.me'],
  mode: 'rewrite',
  at: '2026-12-02T14:00:00.000Z',
  ...over,
});

describe('which RegistryCacheConfigs name a cached host', () => {
  test('a Ready one names its upstream, read as runtimes read it', () => {
    assert.equal(cachedHostOf(cacheConfig('replace.me')), 'replace.me');
    assert.equal(cachedHostOf(cacheConfig('my-registry.example.com:5000')), 'my-registry.example.com:5000');
    assert.equal(cachedHostOf(cacheConfig('index.docker.io')), 'docker.io');
  });

  test('one not Ready, being deleted, or without a registry host names none', () => {
    for (const state of ['Pending', 'Failed', '', 1])
      assert.equal(cachedHostOf(cacheConfig('quay.io', state)), undefined);
    assert.equal(cachedHostOf({ ...cacheConfig('quay.io'), status: undefined }), undefined);
    assert.equal(
      cachedHostOf(cacheConfig('quay.io', 'Ready', { deletionTimestamp: '2026-01-01T00:00:00Z' })),
      undefined,
    );
    for (const upstream of [undefined, 5, '', 'https://quay.io', 'quay.io/path', 'a b'])
      assert.equal(cachedHostOf(cacheConfig(upstream)), undefined, JSON.stringify(upstream));
    for (const item of [null, 'x', [], { spec: 'x', status: { state: 'Ready' } }])
      assert.equal(cachedHostOf(item), undefined);
  });

  test('an upstream longer than a host is not read', () => {
    const long = Array.from({ length: 5 }, () => 'a'.repeat(63)).join('.');
    assert.ok(long.length > MAX_HOST_CHARS);
    assert.equal(cachedHostOf(cacheConfig(long)), undefined);
    assert.equal(cachedHostOf(cacheConfig('a'.repeat(250) + '.io')), `${'a'.repeat(250)}.io`);
  });

  test('a look keeps each host once and at most MAX_TRACKED_HOSTS of them, counting the rest', () => {
    const tally = new CachedHostTally();
    tally.add(cacheConfig('quay.io'));
    tally.add(cacheConfig('quay.io'));
    for (let i = 0; i < MAX_TRACKED_HOSTS + 5; i++) tally.add(cacheConfig(`h${i}.example.com`));
    const found = tally.result();
    assert.equal(found.hosts.size, MAX_TRACKED_HOSTS);
    assert.ok(found.hosts.has('quay.io'));
    assert.equal(found.more, 6);
    tally.reset();
    assert.deepEqual(tally.result(), { hosts: new Set(), more: 0 });
  });

  test('the report lists at most MAX_REPORTED_HOSTS, sorted, and counts the rest', () => {
    const hosts = new Set(Array.from({ length: 40 }, (_, i) => `h${String(i).padStart(2, '0')}.io`));
    const r = cachesReportOf({
      api: undefined,
      found: { hosts, more: 2 },
      rewritten: [],
      mode: 'rewrite',
      at: new Date('2026-12-02T14:00:00Z'),
    });
    assert.equal(r.api, 'none');
    assert.equal(r.hosts.length, MAX_REPORTED_HOSTS);
    assert.equal(r.hosts[0], 'h00.io');
    assert.equal(r.more, 40 - MAX_REPORTED_HOSTS + 2);
    assert.deepEqual(readRegistryCaches(writeRegistryCaches(r)), r);
  });
});

describe('the report as the KCP reads it', () => {
  test('round trip; a forged, malformed or oversized value is not read and the report says so', () => {
    const r = report();
    assert.deepEqual(
      readReport({ data: { [REGISTRY_CACHES_KEY]: writeRegistryCaches(r) } }).registryCaches,
      r,
    );
    const forged = [
      writeRegistryCaches({ ...r, hosts: ['a\nb'] }),
      writeRegistryCaches({
        ...r,
        hosts: Array.from({ length: MAX_REPORTED_HOSTS + 1 }, (_, i) => `h${i}.io`),
      }),
      JSON.stringify({ ...r, mode: 'ignore' }),
      'x'.repeat(40_000),
      '{',
    ];
    for (const value of forged) {
      const read = readReport({ data: { [REGISTRY_CACHES_KEY]: value } });
      assert.equal(read.registryCaches, undefined, value.slice(0, 60));
      assert.equal(read.refused?.reason, 'OutOfBounds');
      assert.match(read.refused.message, /registryCaches/);
    }
  });
});

describe('config registryCaches', () => {
  const base = { overrides: OVERRIDES, availableFeatures: [FEATURE_ALTER_IMG_REGISTRY] };

  test('absent or "rewrite" reads as before; "leave" is kept; anything else is refused, named', () => {
    assert.equal(parseWebhookConfig(base).registryCaches, undefined);
    assert.deepEqual(parseWebhookConfig({ ...base, registryCaches: 'rewrite' }), parseWebhookConfig(base));
    assert.equal(parseWebhookConfig({ ...base, registryCaches: 'leave' }).registryCaches, 'leave');
    assert.equal(parseWebhookConfig({ ...base, registryCaches: null }).registryCaches, undefined);
    assert.throws(
      () => readWebhookConfig({ ...base, registryCaches: 'bypass' }),
      (e: unknown) => e instanceof ConfigError && e.issues.some((i) => i.path === 'registryCaches'),
    );
  });
});

describe('what is left to a cache', () => {
  const cached = new Set(['docker.io', 'other.io']);

  test('the sources the overrides rewrite that have a cache, Docker Hub under either name', () => {
    assert.deepEqual(cachedSourcesOf(OVERRIDES, cached), ['docker.io']);
    assert.deepEqual(cachedSourcesOf(OVERRIDES, new Set()), []);
    const left = overridesLeaving(OVERRIDES, ['docker.io']);
    assert.deepEqual(left, { 'replace.me': 'ghcr.io', 'quay.io': 'mirror.io/quay' });
    assert.equal(overridesLeaving(OVERRIDES, []), OVERRIDES);
  });

  const config = (registryCaches?: string) =>
    parseWebhookConfig({
      overrides: OVERRIDES,
      availableFeatures: [FEATURE_ALTER_IMG_REGISTRY],
      registryCaches,
    });
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'true' } },
    spec: {
      containers: [
        { name: 'a', image: 'nginx:1' },
        { name: 'b', image: 'quay.io/x/y:1' },
      ],
    },
  };
  const images = (registryCaches: string | undefined, cachedRegistries?: ReadonlySet<string>) =>
    mutatePod({
      pod,
      operation: 'CREATE',
      namespace: { name: 'team' },
      config: configOnRuntime(config(registryCaches), cachedRegistries),
      pullSecretAvailable: true,
    }).pod.spec?.containers.map((c) => c.image);

  test('with "leave", images of a cached host are not rewritten, others are', () => {
    assert.deepEqual(images('leave', cached), ['nginx:1', 'mirror.io/quay/x/y:1']);
    assert.deepEqual(images('leave', new Set(['quay.io'])), [
      'mirror.io/hub/library/nginx:1',
      'quay.io/x/y:1',
    ]);
  });

  test('by default, or with no caches known, the landscape’s rules win', () => {
    const all = ['mirror.io/hub/library/nginx:1', 'mirror.io/quay/x/y:1'];
    assert.deepEqual(images(undefined, cached), all);
    assert.deepEqual(images('rewrite', cached), all);
    assert.deepEqual(images('leave', undefined), all);
    assert.deepEqual(images('leave', new Set()), all);
  });

  test('rtb mutate --registry-cache agrees with the webhook', () => {
    const podText = JSON.stringify(pod);
    const configText = JSON.stringify({
      overrides: OVERRIDES,
      availableFeatures: [FEATURE_ALTER_IMG_REGISTRY],
      registryCaches: 'leave',
    });
    const out = JSON.parse(
      previewMutation({ podText, configText, output: 'json', registryCaches: ['index.docker.io'] }),
    ) as Pod;
    assert.deepEqual(
      out.spec?.containers.map((c) => c.image),
      images('leave', new Set(['docker.io'])),
    );
    assert.throws(
      () => previewMutation({ podText, configText, registryCaches: ['https://x.io'] }),
      PreviewInputError,
    );
    const warnings: string[] = [];
    previewMutation({
      podText,
      configText: JSON.stringify({ overrides: OVERRIDES, availableFeatures: [FEATURE_ALTER_IMG_REGISTRY] }),
      registryCaches: ['quay.io'],
      onWarning: (w) => warnings.push(w),
    });
    assert.ok(
      warnings.some((w) => w.includes('--registry-cache changes nothing')),
      warnings.join('\n'),
    );
  });
});

describe('condition RegistryCache and rtb status', () => {
  const rb: RuntimeBootstrapper = {
    metadata: { name: 'r1', namespace: 'kcp-system', generation: 1 },
    spec: { runtimeID: 'r1' },
  };

  test('a rewritten cached host: True, Bypassed, or LeftToCache with "leave"; the hosts named', () => {
    assert.deepEqual(
      [registryCacheCondition(report()).status, registryCacheCondition(report()).reason],
      ['True', 'Bypassed'],
    );
    assert.match(registryCacheCondition(report()).message, /^replace\.me: /);
    assert.equal(registryCacheCondition(report({ mode: 'leave' })).reason, 'LeftToCache');
    assert.deepEqual(
      [
        registryCacheCondition(report({ rewritten: [] })).status,
        registryCacheCondition(report({ rewritten: [] })).reason,
      ],
      ['False', 'NotRewritten'],
    );
    assert.equal(registryCacheCondition(report({ rewritten: [], hosts: [] })).reason, 'NoCaches');
  });

  test('the message stays bounded however long the hosts', () => {
    const long = Array.from(
      { length: MAX_REPORTED_HOSTS },
      (_, i) => `${String(i).padStart(3, '0')}${'a'.repeat(240)}.io`,
    );
    const c = registryCacheCondition(report({ rewritten: long }));
    assert.ok(c.message.length < 1500, String(c.message.length));
    assert.match(c.message, /and \d+ more/);
  });

  test('recorded from the report, dropped without one, and shown by rtb status', () => {
    const status = new StatusBuilder(rb, new Date('2026-12-02T14:00:00Z'));
    recordRegistryCaches(status, { registryCaches: report() });
    const built = status.build();
    const c = built.conditions?.find((x) => x.type === 'RegistryCache');
    assert.equal(c?.reason, 'Bypassed');
    const text = formatFleetStatus(fleetStatus([{ ...rb, status: built }], undefined));
    assert.match(
      text,
      /registry caches on hosts the overrides rewrite[^\n]*\n {2}r1 {2}Bypassed {2}replace\.me: /,
    );
    const again = new StatusBuilder({ ...rb, status: built }, new Date('2026-12-02T14:01:00Z'));
    recordRegistryCaches(again, {});
    assert.equal(
      again.build().conditions?.find((x) => x.type === 'RegistryCache'),
      undefined,
    );
    assert.deepEqual(fleetStatus([{ ...rb, status: again.build() }], undefined).registryCaches, []);
  });
});

describe('the admission policy and registryCaches', () => {
  const config = (registryCaches?: string, overrides: Record<string, string> = OVERRIDES) =>
    parseWebhookConfig({ overrides, availableFeatures: [FEATURE_ALTER_IMG_REGISTRY], registryCaches });

  test('"leave" with overrides is not carried (the webhook alone admits); otherwise as before', () => {
    assert.throws(
      () => admissionPolicyParamData(config('leave')),
      (e: unknown) => e instanceof AdmissionPolicyConfigError && e.field === 'registryCaches',
    );
    assert.deepEqual(admissionPolicyParamData(config('rewrite')), admissionPolicyParamData(config()));
    assert.doesNotThrow(() => admissionPolicyParamData(config('leave', {})));
  });
});
