/**
 * Customers' registry caches on a real API server (docs/registry-caches.md): a RegistryCacheConfig
 * CRD (test/support/registry-cache-crd.ts, the group, version and kind KIM's module serves), a
 * ready cache for the host the seed's overrides rewrite. The webhook runs in this process as its
 * ServiceAccount under exactly the rendered RBAC; the KCP's reading of the report is its own code
 * on the real ConfigMap. Direct mode installing runtimes with and without the CRD, the condition on
 * their RuntimeBootstrappers and `rtb status`: ./direct-registry-caches.test.ts.
 */
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RegistryCachesReport } from '../../src/api/registry-caches.js';
import type { RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { FEATURE_ALTER_IMG_REGISTRY } from '../../src/api/webhook-features.js';
import { readReport } from '../../src/api/webhook-status.js';
import { recordWorkloads } from '../../src/controller/direct/webhook-report.js';
import { StatusBuilder } from '../../src/controller/direct/status-builder.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { useControlPlane } from '../support/control-plane.js';
import { seedConfigText } from '../support/fixtures.js';
import {
  createRegistryCache,
  deleteRegistryCache,
  registryCacheCrd,
  registryCachesReported,
  STATUS_CONFIG_MAP as STATUS,
} from '../support/registry-cache-crd.js';
import { registerFailingOpen, startTestWebhook, type TestWebhook } from '../support/webhook.js';
import { applyWebhookRights, putSeedConfig } from '../support/webhook-runtime.js';

const plane = useControlPlane({ clusters: ['runtime'] });
let cluster: LocalCluster;
let admin: KubeConfig;
let core: CoreV1Api;
let hook: TestWebhook;
const NS = 'team';

const pod = (name: string, images: string[]): V1Pod => ({
  metadata: { name, annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'true' } },
  spec: { containers: images.map((image, i) => ({ name: `c${i}`, image })) },
});

/** The images of a Pod as admission leaves them (a dry-run create: nothing is stored). */
async function admitted(images: string[]): Promise<string[]> {
  const seen = await core.createNamespacedPod({ namespace: NS, body: pod('p', images), dryRun: 'All' });
  return seen.spec?.containers.map((c) => c.image ?? '') ?? [];
}

/** Waits until the report in the status ConfigMap is as `ok` wants it. */
const reported = (ok: (r: RegistryCachesReport) => boolean, what: string): Promise<RegistryCachesReport> =>
  registryCachesReported(admin, ok, what);

/**
 * Condition RegistryCache as the KCP's code builds it from the report on the runtime (direct mode
 * writing it into a real RuntimeBootstrapper, and `rtb status`: ./direct-registry-caches.test.ts).
 */
async function kcpCondition(): Promise<{ status: string; reason: string; message: string } | undefined> {
  const rb: RuntimeBootstrapper = {
    metadata: { name: 'r1', namespace: 'kcp-system' },
    spec: { runtimeID: 'r1' },
  };
  const status = new StatusBuilder(rb, new Date());
  recordWorkloads(status, readReport(await core.readNamespacedConfigMap(STATUS)));
  return status.build().conditions?.find((c) => c.type === 'RegistryCache');
}

async function putConfig(extra: Record<string, unknown>): Promise<void> {
  const config = { ...(JSON.parse(seedConfigText()) as Record<string, unknown>), ...extra };
  const cm = await core.readNamespacedConfigMap({
    name: 'rt-bootstrapper-config',
    namespace: RUNTIME_NAMESPACE,
  });
  await core.replaceNamespacedConfigMap({
    name: 'rt-bootstrapper-config',
    namespace: RUNTIME_NAMESPACE,
    body: { ...cm, data: { 'rt-bootstrapper-config.json': JSON.stringify(config) } },
  });
}

describe('customers’ registry caches', () => {
  before(async () => {
    cluster = plane().cluster('runtime');
    admin = cluster.kubeConfig();
    core = admin.makeApiClient(CoreV1Api);
    await putSeedConfig(cluster);
    const sa = await applyWebhookRights(cluster);
    await ensureCrds(admin, [registryCacheCrd()]);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    // The seed rewrites replace.me: a ready cache for it, one for a host not rewritten, one not ready.
    await createRegistryCache(admin, NS, 'replace-me', 'replace.me', 'Ready');
    await createRegistryCache(admin, NS, 'quay', 'quay.io', 'Ready');
    await createRegistryCache(admin, NS, 'hub', 'docker.io', 'Pending');
    hook = await startTestWebhook(cluster, {
      kubeConfig: sa,
      statusConfigMap: STATUS,
      trustCapability: false,
      escapedPods: false,
      registryCaches: { intervalMs: 300 },
      runtimeAgent: { leaseTiming: { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 } },
    });
    await registerFailingOpen(cluster, hook, pod('probe', ['replace.me/probe:1']));
  });

  after(async () => {
    await hook.stop();
  });

  test('a cache for a rewritten host is reported, the KCP says the overrides bypass it, and by default they still rewrite', async () => {
    const r = await reported((x) => x.hosts.length === 2, 'the two ready caches reported');
    assert.deepEqual(
      { api: r.api, hosts: r.hosts, rewritten: r.rewritten, mode: r.mode, more: r.more },
      {
        api: 'core.kyma-project.io/v1beta1',
        hosts: ['quay.io', 'replace.me'],
        rewritten: ['replace.me'],
        mode: 'rewrite',
        more: 0,
      },
    );
    const c = await kcpCondition();
    assert.deepEqual([c?.status, c?.reason], ['True', 'Bypassed']);
    assert.match(c?.message ?? '', /^replace\.me: /);
    assert.deepEqual(await admitted(['replace.me/app:1']), ['ghcr.io/app:1']);
  });

  test('with registryCaches: leave, the Pod’s image of the cached host is not rewritten, others are', async () => {
    await putConfig({
      registryCaches: 'leave',
      overrides: { 'replace.me': 'ghcr.io', 'other.example.com': 'ghcr.io/other' },
    });
    await reported((x) => x.mode === 'leave', 'the report in mode leave');
    assert.deepEqual(await admitted(['replace.me/app:1', 'other.example.com/x:1']), [
      'replace.me/app:1',
      'ghcr.io/other/x:1',
    ]);
    const c = await kcpCondition();
    assert.deepEqual([c?.status, c?.reason], ['True', 'LeftToCache']);
  });

  test('once the cache is gone, the host is rewritten again', async () => {
    await deleteRegistryCache(admin, NS, 'replace-me');
    await reported((x) => x.hosts.length === 1 && x.rewritten.length === 0, 'the cache gone from the report');
    assert.deepEqual(await admitted(['replace.me/app:1']), ['ghcr.io/app:1']);
    const c = await kcpCondition();
    assert.deepEqual([c?.status, c?.reason], ['False', 'NotRewritten']);
  });
});
