// test-matrix: kubernetes
/**
 * Escaped Pods on a real API server: Pods stored without the webhook (no registration here, as
 * when it failed open) and set Running through the status subresource as a kubelet would (no Pod
 * runs; the real node comes with the e2e suite). The webhook runs in this process as its
 * ServiceAccount under exactly the rendered RBAC; the test plays the controllers' part of a
 * rollout (test/support/trust-workloads.ts).
 */
import { CoreV1Api, type KubeConfig, type V1OwnerReference, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import {
  ESCAPED_PODS_KEY,
  ESCAPED_REPAIR_ANNOTATION,
  readEscaped,
  type EscapedPodsReport,
} from '../../src/api/escaped-pods.js';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import {
  ANNOTATION_MODIFIED,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_ALTER_IMG_REGISTRY,
} from '../../src/api/webhook-features.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { useControlPlane } from '../support/control-plane.js';
import { Workloads } from '../support/trust-workloads.js';
import { startTestWebhook, type TestWebhook } from '../support/webhook.js';
import { putSeedConfig, webhookRuntime } from '../support/webhook-runtime.js';
import { eventuallyFailsWith } from '../support/fails-with.js';

const plane = useControlPlane({ clusters: ['runtime'] });
let cluster: LocalCluster;
let admin: KubeConfig;
let core: CoreV1Api;
let sa: KubeConfig;
let w: Workloads;
const STATUS = { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP };

/** A namespace whose Pods get the registry rewrite and the pull Secret (its annotations). */
async function namespace(name: string): Promise<string> {
  await core.createNamespace({
    body: {
      metadata: {
        name,
        annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'true', [FEATURE_ADD_IMG_PULL_SECRET]: 'true' },
      },
    },
  });
  return name;
}

/** Creates a Pod as stored without the webhook and reports it Running, as its kubelet would. */
async function runningPod(ns: string, body: V1Pod): Promise<void> {
  const created = await core.createNamespacedPod({ namespace: ns, body });
  const name = created.metadata?.name ?? '';
  await core.replaceNamespacedPodStatus({
    name,
    namespace: ns,
    body: { ...created, status: { phase: 'Running' } },
  });
}

/** How the Pods of a test are stored: as the webhook would have admitted them, or without it. */
interface Stored {
  readonly image: string;
  /** Admitted by us: the mark and the pull Secret. */
  readonly admitted?: boolean;
}

/** A Pod of `owner` (or a bare one), stored as `o` says, reported Running. */
async function pod(ns: string, name: string, owner: V1OwnerReference | undefined, o: Stored): Promise<void> {
  await runningPod(ns, {
    metadata: {
      name,
      labels: owner === undefined ? undefined : { app: owner.name },
      annotations: o.admitted === true ? { [ANNOTATION_MODIFIED]: 'true' } : undefined,
      ownerReferences: owner === undefined ? undefined : [owner],
    },
    spec: {
      containers: [{ name: 'app', image: o.image }],
      imagePullSecrets: o.admitted === true ? [{ name: 'registry-credentials' }] : undefined,
    },
  });
}

/** A Deployment (its ReplicaSet `<name>-1`) with `pods` Pods stored as `o` says; its ReplicaSet. */
async function deployment(ns: string, name: string, pods: number, o: Stored): Promise<V1OwnerReference> {
  await w.create('Deployment', ns, name, 0, '');
  const rs = await w.apps.readNamespacedReplicaSet({ name: `${name}-1`, namespace: ns });
  const owner: V1OwnerReference = {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    name: `${name}-1`,
    uid: rs.metadata?.uid ?? '',
    controller: true,
  };
  for (let i = 0; i < pods; i++) await pod(ns, `${name}-${i}`, owner, o);
  return owner;
}

async function report(): Promise<EscapedPodsReport | undefined> {
  const cm = await core.readNamespacedConfigMap({ ...STATUS });
  return readEscaped(cm.data?.[ESCAPED_PODS_KEY]);
}

async function metric(hook: TestWebhook, name: string, labels: Record<string, string> = {}): Promise<number> {
  const values = (await hook.app.registry.getSingleMetric(name)?.get())?.values ?? [];
  return values
    .filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))
    .reduce((sum, v) => sum + v.value, 0);
}

/** Waits until the agent counted `n` more times. */
async function moreCounts(hook: TestWebhook, n: number): Promise<void> {
  const ok = (): Promise<number> => metric(hook, 'rtb_webhook_escaped_counts_total', { result: 'ok' });
  const counts = await ok();
  await eventually(async () => ((await ok()) >= counts + n ? true : undefined), 30_000, `${n} more counts`);
}

async function webhook(repair: boolean): Promise<TestWebhook> {
  return startTestWebhook(cluster, {
    kubeConfig: sa,
    ...(process.env.ESCAPED_DEBUG ? { logger: createLogger({ level: 'debug' }) } : {}),
    statusConfigMap: STATUS,
    trustCapability: false,
    escapedPods: { intervalMs: 300, repair, repairPollMs: 200, repairDeadlineMs: 60_000 },
    runtimeAgent: { leaseTiming: { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 } },
  });
}

const templateAnnotation = async (ns: string, name: string): Promise<string | undefined> =>
  (await w.apps.readNamespacedDeployment({ name, namespace: ns })).spec?.template.metadata?.annotations?.[
    ESCAPED_REPAIR_ANNOTATION
  ];

describe('escaped Pods', () => {
  before(async () => {
    ({ cluster, admin, core, sa } = await webhookRuntime(plane().cluster('runtime')));
    w = new Workloads(admin);
    await putSeedConfig(cluster);
  });

  test('are counted by reason; without the repair nothing is touched', async () => {
    const ns = await namespace('escaped-count');
    // Admitted without the webhook: an image the set rewrites, no pull Secret, no mark.
    await deployment(ns, 'web', 2, { image: 'replace.me/web:1' });
    // A bare one of the same kind.
    await pod(ns, 'bare', undefined, { image: 'replace.me/a:1' });
    // Admitted by us: rewritten, with the Secret and the mark. Follows the set.
    await deployment(ns, 'good', 1, { image: 'ghcr.io/good:1', admitted: true });
    // Opted out on the Pod: out of scope.
    await runningPod(ns, {
      metadata: { name: 'opted-out', annotations: { 'rt-cfg.kyma-project.io/all': 'false' } },
      spec: { containers: [{ name: 'a', image: 'replace.me/a:1' }] },
    });
    // Not running: not counted.
    await core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'pending' }, spec: { containers: [{ name: 'a', image: 'replace.me/a:1' }] } },
    });
    const hook = await webhook(false);
    try {
      const r = await eventually(
        async () => {
          const got = await report();
          return got !== undefined && got.pods === 3 ? got : undefined;
        },
        30_000,
        'three escaped Pods reported',
      );
      assert.deepEqual(r.reasons, { unstamped: 3, registry: 3, 'pull-secret': 3 });
      assert.deepEqual([r.bare, r.repair, r.restarted], [1, false, 0]);
      assert.equal(await metric(hook, 'rtb_webhook_escaped_pods'), 3);
      assert.equal(await metric(hook, 'rtb_webhook_escaped_pod_reasons', { reason: 'registry' }), 3);
      assert.equal(await metric(hook, 'rtb_webhook_escaped_bare_pods'), 1);
      // No Pod or namespace name in any label of the metrics.
      const text = await hook.app.registry.metrics();
      for (const line of text.split('\n').filter((l) => l.startsWith('rtb_webhook_escaped')))
        assert.doesNotMatch(line.replace(/^[a-z_]+/, ''), /web-|bare|escaped-count/, line);
      // A few more counts: still nothing restarted, nothing deleted.
      await moreCounts(hook, 3);
      assert.equal(await templateAnnotation(ns, 'web'), undefined);
      const pods = await core.listNamespacedPod({ namespace: ns });
      assert.equal(pods.items.length, 6);
    } finally {
      await hook.stop();
      await w.clear(ns);
    }
  });

  test('the webhook’s ServiceAccount may write the repair’s annotation with a set version only', async () => {
    const ns = await namespace('escaped-policy');
    await deployment(ns, 'web', 0, { image: 'x' });
    const write = (value: string, extra: Record<string, string> = {}) =>
      kubeRequest(sa, {
        method: 'PATCH',
        path: `/apis/apps/v1/namespaces/${ns}/deployments/web`,
        query: { fieldManager: 'rt-bootstrapper-trust-restarter', force: true },
        contentType: 'application/apply-patch+yaml',
        body: {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web', namespace: ns },
          spec: { template: { metadata: { annotations: { [ESCAPED_REPAIR_ANNOTATION]: value, ...extra } } } },
        },
        parseResponse: false,
      });
    // The API server takes a moment to enforce a policy created in `before`.
    await eventuallyFailsWith(() => write('a b'), 403, 20_000, 'the write policy enforced');
    await write('config-0123456789abcdef');
    assert.equal(await templateAnnotation(ns, 'web'), 'config-0123456789abcdef');
    for (const bad of ['', 'a b', 'x'.repeat(65), '-leading'])
      await assert.rejects(write(bad), (err: unknown) => statusCodeOf(err) === 403, JSON.stringify(bad));
    await assert.rejects(write('v2', { other: 'x' }), (err: unknown) => statusCodeOf(err) === 403);
    assert.equal(await templateAnnotation(ns, 'web'), 'config-0123456789abcdef');
  });

  test('with the repair on, their owners are restarted once, bare Pods never, and the count returns to 0', async () => {
    const ns = await namespace('escaped-repair');
    const rs = await deployment(ns, 'web', 2, { image: 'replace.me/web:1' });
    await pod(ns, 'bare', undefined, { image: 'replace.me/a:1' });
    const hook = await webhook(true);
    try {
      const token = await eventually(() => templateAnnotation(ns, 'web'), 30_000, 'the Deployment restarted');
      // The ConfigMap names no set here (a config read from the ConfigMap without one): a digest.
      assert.match(token, /^config-[0-9a-f]{16}$/);
      // The controllers' part: the old Pods replaced by one the webhook admitted, the rollout done.
      for (const i of [0, 1])
        await core.deleteNamespacedPod({ name: `web-${i}`, namespace: ns, gracePeriodSeconds: 0 });
      await pod(ns, 'web-new', rs, { image: 'ghcr.io/web:1', admitted: true });
      await w.report('Deployment', ns, 'web', 0);
      const after = await eventually(
        async () => {
          const r = await report();
          return r !== undefined && r.pods === 1 && r.restarted >= 1 ? r : undefined;
        },
        30_000,
        'only the bare Pod left escaped',
      );
      assert.deepEqual([after.bare, after.repair], [1, true]);
      assert.equal(
        await metric(hook, 'rtb_webhook_escaped_repairs_total', { outcome: 'restarted', kind: 'Deployment' }),
        1,
      );
      // The bare Pod is never deleted or evicted.
      const bare = await core.readNamespacedPod({ name: 'bare', namespace: ns });
      assert.equal(bare.metadata?.deletionTimestamp, undefined);
      // Its creator replaces it: the count returns to 0.
      await core.deleteNamespacedPod({ name: 'bare', namespace: ns, gracePeriodSeconds: 0 });
      await eventually(
        async () => ((await report())?.pods === 0 ? true : undefined),
        30_000,
        'no escaped Pod',
      );
      assert.equal(await metric(hook, 'rtb_webhook_escaped_pods'), 0);
      // Restarted once per set: a Pod of it that escapes again is counted, the template not written again.
      const generation = (await w.apps.readNamespacedDeployment({ name: 'web', namespace: ns })).metadata
        ?.generation;
      await pod(ns, 'web-again', rs, { image: 'replace.me/web:1' });
      await eventually(
        async () => ((await report())?.pods === 1 ? true : undefined),
        30_000,
        'the Pod that escaped again counted',
      );
      await moreCounts(hook, 3);
      const now = await w.apps.readNamespacedDeployment({ name: 'web', namespace: ns });
      assert.equal(now.metadata?.generation, generation);
      assert.equal(
        (await metric(hook, 'rtb_webhook_escaped_repairs_total', {
          outcome: 'repaired-before',
          kind: 'Deployment',
        })) > 0,
        true,
      );
    } finally {
      await hook.stop();
    }
    // The report the status ConfigMap holds is the agent's only (its own field manager).
    const cm = await kubeRequest<{
      metadata?: { managedFields?: { manager?: string; fieldsV1?: unknown }[] };
    }>(admin, {
      method: 'GET',
      path: `/api/v1/namespaces/${STATUS.namespace}/configmaps/${STATUS.name}`,
    });
    const managers = (cm.metadata?.managedFields ?? []).filter((f) =>
      JSON.stringify(f.fieldsV1).includes(ESCAPED_PODS_KEY),
    );
    assert.deepEqual(
      managers.map((f) => f.manager),
      ['rt-bootstrapper-webhook-escaped-pods'],
    );
  });
});
