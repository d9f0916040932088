// test-matrix: kubernetes
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { renderWebhookManifests } from '../../src/render/webhook-manifests.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { seedConfigText, seedPodAfter, seedPodBefore } from '../support/fixtures.js';
import { registerWebhook, startTestWebhook, type TestWebhook } from '../support/webhook.js';
import { replaceConfigText } from '../support/webhook-runtime.js';

const plane = useControlPlane({ clusters: ['runtime'] });
let webhook: TestWebhook;
let core: CoreV1Api;
const FIPS = 'rt-cfg.kyma-project.io/set-fips-mode';
const PULL = 'rt-cfg.kyma-project.io/add-img-pull-secret';
const REGISTRY = 'rt-cfg.kyma-project.io/alter-img-registry';
const dockerConfig = (auth: string): Record<string, string> => ({
  '.dockerconfigjson': Buffer.from(JSON.stringify({ auths: { 'ghcr.io': { auth } } })).toString('base64'),
});

const plainPod = (
  name: string,
  annotations: Record<string, string> = {},
  image = 'replace.me/app:1',
): V1Pod => ({
  metadata: { name, annotations },
  spec: { containers: [{ name: 'app', image }] },
});

describe('the webhook through a real kube-apiserver', () => {
  before(async () => {
    const cluster = plane().cluster('runtime');
    core = cluster.kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'kyma-system' } } });
    await core.createNamespacedSecret({
      namespace: 'kyma-system',
      body: {
        metadata: { name: 'registry-credentials' },
        type: 'kubernetes.io/dockerconfigjson',
        data: dockerConfig('v1'),
      },
    });
    await core.createNamespacedConfigMap({
      namespace: 'kyma-system',
      body: {
        metadata: { name: 'rt-bootstrapper-config' },
        data: { 'rt-bootstrapper-config.json': seedConfigText() },
      },
    });
    // dry-run-ns gets no background copy, so the dry-run test sees only what admission writes.
    webhook = await startTestWebhook(cluster, {
      excludedNamespaces: ['kube-system', 'kube-public', 'kube-node-lease', 'dry-run-ns'],
    });
    const manifests = renderWebhookManifests({
      image: 'unused',
      url: webhook.url,
      caBundlePem: webhook.ca.certPem,
      failurePolicy: 'Fail',
    });
    await registerWebhook(
      cluster,
      manifests.mutatingWebhookConfiguration,
      plainPod('probe', { [FIPS]: 'true' }),
    );
  });

  after(async () => {
    await webhook.stop();
  });

  test('the seed example comes out as the seed says', async () => {
    const before = seedPodBefore();
    const stored = await core.createNamespacedPod({ namespace: 'default', body: before as V1Pod });
    const expected = seedPodAfter();
    assert.deepEqual(stored.metadata?.annotations, expected.metadata?.annotations);
    const c = stored.spec!.containers[0]!;
    const e = expected.spec!.containers[0]!;
    assert.equal(c.image, e.image);
    assert.deepEqual(JSON.parse(JSON.stringify(c.env)), e.env);
    assert.deepEqual(JSON.parse(JSON.stringify(c.volumeMounts)), e.volumeMounts);
    assert.deepEqual(
      JSON.parse(JSON.stringify(stored.spec!.imagePullSecrets)),
      expected.spec!.imagePullSecrets,
    );
    assert.deepEqual(JSON.parse(JSON.stringify(stored.spec!.volumes)), expected.spec!.volumes);
  });

  test('the Pods of one template (generateName, as a ReplicaSet makes them), created at once, are each mutated', async () => {
    const template = seedPodBefore();
    const { name: _omitted, ...metadata } = template.metadata ?? {};
    const body = { ...template, metadata: { ...metadata, generateName: 'replica-' } } as V1Pod;
    // The API server sends them byte-identical but for the request uid (the name is generated
    // and managedFields carry a time in seconds, so Pods created within a second match).
    const pods = await Promise.all(
      Array.from({ length: 6 }, () => core.createNamespacedPod({ namespace: 'default', body })),
    );
    const expected = seedPodAfter().spec!.containers[0]!;
    for (const pod of pods) {
      assert.match(pod.metadata?.name ?? '', /^replica-/);
      assert.equal(pod.spec!.containers[0]!.image, expected.image);
      assert.deepEqual(JSON.parse(JSON.stringify(pod.spec!.containers[0]!.env)), expected.env);
      assert.deepEqual(JSON.parse(JSON.stringify(pod.spec!.imagePullSecrets)), [
        { name: 'registry-credentials' },
      ]);
    }
  });

  test('a namespace annotation opts all its Pods in; a Pod annotation "false" opts one out', async () => {
    await core.createNamespace({ body: { metadata: { name: 'fips-ns', annotations: { [FIPS]: 'true' } } } });
    const inPod = await core.createNamespacedPod({ namespace: 'fips-ns', body: plainPod('in') });
    assert.deepEqual(JSON.parse(JSON.stringify(inPod.spec!.containers[0]!.env)), [
      { name: 'KYMA_FIPS_MODE_ENABLED', value: 'true' },
      { name: 'FIPS_MODE_ENABLED', value: 'true' },
    ]);
    const outPod = await core.createNamespacedPod({
      namespace: 'fips-ns',
      body: plainPod('out', { [FIPS]: 'false' }),
    });
    assert.equal(outPod.spec!.containers[0]!.env, undefined);
    assert.equal(outPod.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/defaulted'], undefined);
  });

  test('the pull Secret is created in a brand-new namespace before the Pod is stored', async () => {
    await core.createNamespace({ body: { metadata: { name: 'brand-new' } } });
    const pod = await core.createNamespacedPod({
      namespace: 'brand-new',
      body: plainPod('needs-secret', { [PULL]: 'true' }),
    });
    assert.deepEqual(JSON.parse(JSON.stringify(pod.spec!.imagePullSecrets)), [
      { name: 'registry-credentials' },
    ]);
    // Created synchronously on the admission path, so it is there the moment the Pod is.
    const copy = await core.readNamespacedSecret({ name: 'registry-credentials', namespace: 'brand-new' });
    assert.equal(copy.type, 'kubernetes.io/dockerconfigjson');
    assert.deepEqual(copy.data, dockerConfig('v1'));
    assert.equal(copy.metadata?.labels?.['app.kubernetes.io/managed-by'], 'rt-bootstrapper');
  });

  test('a dry-run create writes no Secret', async () => {
    await core.createNamespace({ body: { metadata: { name: 'dry-run-ns' } } });
    const pod = await core.createNamespacedPod({
      namespace: 'dry-run-ns',
      body: plainPod('dry', { [PULL]: 'true' }),
      dryRun: 'All',
    });
    assert.deepEqual(JSON.parse(JSON.stringify(pod.spec!.imagePullSecrets)), [
      { name: 'registry-credentials' },
    ]);
    await assert.rejects(
      core.readNamespacedSecret({ name: 'registry-credentials', namespace: 'dry-run-ns' }),
      /404|not found/i,
    );
    await core.createNamespacedPod({ namespace: 'dry-run-ns', body: plainPod('real', { [PULL]: 'true' }) });
    const copy = await core.readNamespacedSecret({ name: 'registry-credentials', namespace: 'dry-run-ns' });
    assert.ok(copy.data, 'the real create made the copy');
  });

  test('the copies follow the source, and an edited or deleted copy is restored', async () => {
    await core.createNamespace({ body: { metadata: { name: 'copies' } } });
    const read = () => core.readNamespacedSecret({ name: 'registry-credentials', namespace: 'copies' });
    /** Waits until the copy holds the source's v2 credentials (`what` brought them there). */
    const holdsV2 = (what: string) =>
      eventually(
        async () =>
          (await read()).data?.['.dockerconfigjson'] === dockerConfig('v2')['.dockerconfigjson']
            ? true
            : undefined,
        15_000,
        what,
      );
    await eventually(async () => (await read()).data, 15_000, 'a copy in a new namespace');
    await core.replaceNamespacedSecret({
      name: 'registry-credentials',
      namespace: 'kyma-system',
      body: {
        metadata: { name: 'registry-credentials' },
        type: 'kubernetes.io/dockerconfigjson',
        data: dockerConfig('v2'),
      },
    });
    await holdsV2('the copy to follow the source');
    const current = await read();
    await core.replaceNamespacedSecret({
      name: 'registry-credentials',
      namespace: 'copies',
      body: { ...current, data: dockerConfig('tampered') },
    });
    await holdsV2('the edited copy to be restored');
    await core.deleteNamespacedSecret({ name: 'registry-credentials', namespace: 'copies' });
    await eventually(async () => (await read()).data, 15_000, 'the deleted copy to be restored');
  });

  test('a live config change takes effect without a restart; a bad one is refused and the last good stays', async () => {
    const config = JSON.parse(seedConfigText()) as { overrides: Record<string, string> };
    config.overrides = { 'replace.me': 'mirror.example.com/ghcr' };
    await replaceConfigText(plane().cluster('runtime'), JSON.stringify(config));
    let n = 0;
    await eventually(
      async () => {
        const pod = await core.createNamespacedPod({
          namespace: 'default',
          body: plainPod(`live-${n++}`, { [REGISTRY]: 'true' }),
          dryRun: 'All',
        });
        return pod.spec!.containers[0]!.image === 'mirror.example.com/ghcr/app:1' ? true : undefined;
      },
      15_000,
      'the new override',
    );

    const before =
      (await webhook.app.registry.getSingleMetric('rtb_webhook_config_reloads_total')?.get())?.values.find(
        (v) => v.labels.result === 'failure',
      )?.value ?? 0;
    await replaceConfigText(
      plane().cluster('runtime'),
      '{"availableFeatures":["rt-cfg.kyma-project.io/nope"]}',
    );
    await eventually(
      async () => {
        const v =
          (
            await webhook.app.registry.getSingleMetric('rtb_webhook_config_reloads_total')?.get()
          )?.values.find((x) => x.labels.result === 'failure')?.value ?? 0;
        return v > before ? true : undefined;
      },
      15_000,
      'the bad config to be refused',
    );
    const pod = await core.createNamespacedPod({
      namespace: 'default',
      body: plainPod('still-good', { [REGISTRY]: 'true' }),
    });
    assert.equal(
      pod.spec!.containers[0]!.image,
      'mirror.example.com/ghcr/app:1',
      'the last good config stays in force',
    );
    // Put the seed config back for the other tests.
    await replaceConfigText(plane().cluster('runtime'), seedConfigText());
    await eventually(
      () => (webhook.app.config.get()?.overrides['replace.me'] === 'ghcr.io' ? true : undefined),
      15_000,
      'seed config back',
    );
  });

  test('images the overrideExclusions name are left alone, the others rewritten; an UPDATE to an excluded one too', async () => {
    const seed = JSON.parse(seedConfigText()) as Record<string, unknown>;
    const setConfig = (config: Record<string, unknown>): Promise<void> =>
      replaceConfigText(plane().cluster('runtime'), JSON.stringify(config));
    await setConfig({ ...seed, overrideExclusions: ['replace.me/keep', 'replace.me/pinned:1'] });
    await eventually(
      () => (webhook.app.config.get()?.overrideExclusions?.length === 2 ? true : undefined),
      15_000,
      'the exclusions in force',
    );
    try {
      const stored = await core.createNamespacedPod({
        namespace: 'default',
        body: {
          metadata: { name: 'excluded', annotations: { [REGISTRY]: 'true', [FIPS]: 'true' } },
          spec: {
            initContainers: [{ name: 'init', image: 'replace.me/keep/setup:1' }],
            containers: [
              { name: 'kept', image: 'replace.me/keep' },
              { name: 'pinned', image: 'replace.me/pinned:1' },
              { name: 'next', image: 'replace.me/pinned:2' },
              { name: 'near', image: 'replace.me/keeper:1' },
            ],
          },
        },
      });
      assert.deepEqual(
        [...stored.spec!.initContainers!, ...stored.spec!.containers].map((c) => c.image),
        [
          'replace.me/keep/setup:1',
          'replace.me/keep',
          'replace.me/pinned:1',
          'ghcr.io/pinned:2',
          'ghcr.io/keeper:1',
        ],
      );
      assert.ok(
        stored.spec!.containers.every((c) => c.env?.some((e) => e.name === 'KYMA_FIPS_MODE_ENABLED')),
        'the other features still apply to every container',
      );
      const current = await core.readNamespacedPod({ name: 'excluded', namespace: 'default' });
      current.spec!.containers[3]!.image = 'replace.me/keep/other:2';
      const updated = await core.replaceNamespacedPod({
        name: 'excluded',
        namespace: 'default',
        body: current,
      });
      assert.equal(updated.spec!.containers[3]!.image, 'replace.me/keep/other:2');
    } finally {
      await setConfig(seed);
      await eventually(
        () => (webhook.app.config.get()?.overrideExclusions === undefined ? true : undefined),
        15_000,
        'seed config back',
      );
    }
  });

  test('an UPDATE rewrites only the image', async () => {
    await core.createNamespacedPod({
      namespace: 'default',
      body: plainPod('updated', { [REGISTRY]: 'true', [FIPS]: 'true' }),
    });
    const current = await core.readNamespacedPod({ name: 'updated', namespace: 'default' });
    const envBefore = JSON.parse(JSON.stringify(current.spec!.containers[0]!.env)) as unknown;
    current.spec!.containers[0]!.image = 'replace.me/app:2';
    const stored = await core.replaceNamespacedPod({ name: 'updated', namespace: 'default', body: current });
    assert.equal(stored.spec!.containers[0]!.image, 'ghcr.io/app:2');
    assert.deepEqual(JSON.parse(JSON.stringify(stored.spec!.containers[0]!.env)), envBefore);
  });

  test('an ephemeral container added through the subresource gets its registry rewritten', async () => {
    await core.createNamespacedPod({
      namespace: 'default',
      body: plainPod('debug-me', { [REGISTRY]: 'true' }),
    });
    const current = await core.readNamespacedPod({ name: 'debug-me', namespace: 'default' });
    current.spec!.ephemeralContainers = [{ name: 'debugger', image: 'replace.me/busybox:1.36' }];
    const stored = await core.replaceNamespacedPodEphemeralcontainers({
      name: 'debug-me',
      namespace: 'default',
      body: current,
    });
    assert.equal(stored.spec!.ephemeralContainers?.[0]?.image, 'ghcr.io/busybox:1.36');
  });
});
