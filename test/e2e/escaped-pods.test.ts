// fail-open: on purpose (the webhook is scaled to zero while Pods are created: they are the escaped Pods)
/**
 * Escaped Pods on a real node, on a runtime without the admission policy: Pods created while the
 * webhook is scaled to zero are admitted unmutated (it fails open) and run; once the webhook is
 * back its agent counts them by reason, and with `--repair-escaped` it restarts their owner, whose
 * new Pod the webhook mutates, so the count returns to 0. A bare Pod is reported, never deleted.
 * On a runtime with the admission policy (rendered from the same config), a Pod created while the
 * webhook is scaled to zero is mutated by the API server itself and runs from the secured registry.
 */
import { AppsV1Api, CoreV1Api, type KubeConfig, type V1Deployment } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ESCAPED_REPAIR_ANNOTATION } from '../../src/api/escaped-pods.js';
import { MUTATING_WEBHOOK_NAME, RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT } from '../../src/api/runtime-names.js';
import { apiServerMetric } from '../support/apiserver-metrics.js';
import {
  ANNOTATION_DEFAULTED,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_ALTER_IMG_REGISTRY,
} from '../../src/api/webhook-features.js';
import { eventually } from '../../src/envtest/eventually.js';
import { KUBERNETES_VERSIONS, NODE_KUBERNETES_VERSION } from '../../src/envtest/kubernetes-versions.js';
import { parseWebhookConfig } from '../../src/api/webhook-config.js';
import { applyObjects } from '../../src/kube/apply.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { objectPath } from '../../src/kube/resource-path.js';
import { admissionPolicyManifestList, renderAdmissionPolicy } from '../../src/render/admission-policy.js';
import { createMutatedPod, httpPod, isMutated, isReady, POD_READY_MS, POLL_MS } from './support/pods.js';
import {
  podProxyGet,
  useWebhookOnNode,
  webhookAvailable,
  webhookLogs,
  webhookPods,
} from './support/webhook-on-node.js';

// The node's minor serves the policy only behind its gate (1.34: v1beta1).
const { api: POLICY_API, apiserverArgs } = KUBERNETES_VERSIONS[NODE_KUBERNETES_VERSION].admissionPolicy;
const webhook = useWebhookOnNode('apply', apiserverArgs);
const NAMESPACE = 'e2e-escaped';
const POLICY_NAMESPACE = 'e2e-policy';
const METRICS_PORT = 8080;

/** Sets the webhook's replicas and extra flags (beside the rendered ones) in one update. */
async function reshape(kc: KubeConfig, replicas: number, extraArgs: readonly string[]): Promise<void> {
  const apps = kc.makeApiClient(AppsV1Api);
  await eventually(
    async () => {
      const d = await apps.readNamespacedDeployment({
        name: WEBHOOK_DEPLOYMENT,
        namespace: RUNTIME_NAMESPACE,
      });
      const container = d.spec?.template.spec?.containers[0];
      assert.ok(d.spec && container);
      const rendered = (container.args ?? []).filter(
        (a) => !a.startsWith('--escaped-interval') && a !== '--repair-escaped',
      );
      container.args = [...rendered, ...extraArgs];
      d.spec.replicas = replicas;
      // A conflict (the deployment controller wrote its status) is read again.
      return apps
        .replaceNamespacedDeployment({ name: WEBHOOK_DEPLOYMENT, namespace: RUNTIME_NAMESPACE, body: d })
        .then(
          () => true,
          () => undefined,
        );
    },
    30_000,
    'the webhook Deployment updated',
  );
}

/**
 * Scales the webhook to zero and waits until none of its Pods is left, terminating ones included
 * (a terminating Pod still answers while it drains): the outage.
 */
async function scaleToZero(kc: KubeConfig): Promise<void> {
  const apps = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  await reshape(kc, 0, []);
  const d = await apps.readNamespacedDeployment({ name: WEBHOOK_DEPLOYMENT, namespace: RUNTIME_NAMESPACE });
  const labelSelector = Object.entries(d.spec?.selector.matchLabels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  await eventually(
    async () =>
      (await core.listNamespacedPod({ namespace: RUNTIME_NAMESPACE, labelSelector })).items.length === 0
        ? true
        : undefined,
    POD_READY_MS,
    'no webhook Pod, not even a terminating one',
    POLL_MS,
  );
}

/** The escaped-Pod count the agent's leader reports (the largest of the replicas': the others say 0). */
async function escapedCount(kc: KubeConfig, d: V1Deployment): Promise<Record<string, number>> {
  const seen: Record<string, number> = {};
  for (const pod of await webhookPods(kc, d)) {
    const text = await podProxyGet(kc, pod, METRICS_PORT, 'metrics');
    for (const m of text.matchAll(
      /^(rtb_webhook_escaped_pods|rtb_webhook_escaped_bare_pods|rtb_webhook_escaped_pod_reasons\{reason="([a-z-]+)"\}) (\d+)$/gm,
    )) {
      const key = m[2] ?? (m[1] === 'rtb_webhook_escaped_pods' ? 'pods' : 'bare');
      seen[key] = Math.max(seen[key] ?? 0, Number(m[3]));
    }
  }
  return seen;
}

const appDeployment = (image: string): V1Deployment => ({
  metadata: { name: 'app' },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'app' } },
    template: { metadata: { labels: { app: 'app' } }, spec: httpPod('app', image).spec },
  },
});

/** Creates namespace `name`, whose Pods ask for the registry rewrite and the pull Secret. */
async function createRewritingNamespace(core: CoreV1Api, name: string): Promise<void> {
  await core.createNamespace({
    body: {
      metadata: {
        name,
        annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'true', [FEATURE_ADD_IMG_PULL_SECRET]: 'true' },
      },
    },
  });
}

describe('escaped Pods on a real node', () => {
  test('Pods created while the webhook is scaled to zero are counted, and with the repair their owner is restarted and the count returns to 0', async (t) => {
    const { kc, landscape: l } = webhook();
    const core = kc.makeApiClient(CoreV1Api);
    const apps = kc.makeApiClient(AppsV1Api);
    const replicas = (await webhookAvailable(kc)).spec?.replicas ?? 1;
    await createRewritingNamespace(core, NAMESPACE);
    try {
      // The outage: no webhook Pod at all; the API server fails open (failurePolicy Ignore).
      await scaleToZero(kc);
      await apps.createNamespacedDeployment({ namespace: NAMESPACE, body: appDeployment(l.openImage) });
      await core.createNamespacedPod({ namespace: NAMESPACE, body: httpPod('bare', l.openImage) });
      const escaped = await eventually(
        async () => {
          const pods = (await core.listNamespacedPod({ namespace: NAMESPACE })).items;
          return pods.length === 2 && pods.every((p) => p.status?.phase === 'Running') ? pods : undefined;
        },
        POD_READY_MS,
        'the Pods created meanwhile Running',
        POLL_MS,
      );
      assert.ok(
        escaped.every((p) => !isMutated(p)),
        'admitted unmutated',
      );

      // The webhook back, counting only: both counted, by reason; nothing restarted.
      await reshape(kc, replicas, ['--escaped-interval=3s']);
      const counted = await eventually(
        async () => {
          const c = await escapedCount(kc, await webhookAvailable(kc));
          return c.pods === 2 ? c : undefined;
        },
        POD_READY_MS,
        'two escaped Pods counted',
        1_000,
      );
      t.diagnostic(`counted: ${JSON.stringify(counted)}`);
      assert.deepEqual(
        [counted.bare, counted.unstamped, counted.registry, counted['pull-secret']],
        [1, 2, 2, 2],
      );
      const template = async (): Promise<string | undefined> =>
        (await apps.readNamespacedDeployment({ name: 'app', namespace: NAMESPACE })).spec?.template.metadata
          ?.annotations?.[ESCAPED_REPAIR_ANNOTATION];
      assert.equal(await template(), undefined);

      // The repair on: the owner restarted, its new Pod mutated and Running; the bare Pod left alone.
      await reshape(kc, replicas, ['--escaped-interval=3s', '--repair-escaped']);
      await eventually(template, POD_READY_MS, 'the app Deployment restarted', 1_000);
      const repaired = await eventually(
        async () => {
          const pods = (await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: 'app=app' }))
            .items;
          const live = pods.filter((p) => p.metadata?.deletionTimestamp === undefined);
          return live.length === 1 && live.every((p) => isMutated(p) && isReady(p)) ? live[0] : undefined;
        },
        POD_READY_MS,
        'the app’s new Pod mutated and Ready',
        POLL_MS,
      );
      assert.ok(repaired.spec?.containers[0]?.image?.startsWith(l.secured.host), 'its image rewritten');
      await eventually(
        async () => {
          const c = await escapedCount(kc, await webhookAvailable(kc));
          return c.pods === 1 && c.bare === 1 ? true : undefined;
        },
        POD_READY_MS,
        'only the bare Pod left escaped',
        1_000,
      );
      const bare = await core.readNamespacedPod({ name: 'bare', namespace: NAMESPACE });
      assert.equal(bare.metadata?.deletionTimestamp, undefined, 'the bare Pod is never deleted');
      // Its creator replaces it: the count returns to 0.
      await core.deleteNamespacedPod({ name: 'bare', namespace: NAMESPACE, gracePeriodSeconds: 0 });
      await eventually(
        async () => ((await escapedCount(kc, await webhookAvailable(kc))).pods === 0 ? true : undefined),
        POD_READY_MS,
        'no escaped Pod',
        1_000,
      );
    } catch (error) {
      t.diagnostic((await webhookLogs(kc).catch(() => [])).join('\n'));
      throw error;
    } finally {
      await reshape(kc, replicas, []);
    }
  });
});

describe(`the admission policy (${POLICY_API}) on a real node`, () => {
  test('a Pod created while the webhook is scaled to zero is mutated by the policy and runs from the secured registry', async (t) => {
    const { kc, landscape: l, sources } = webhook();
    const core = kc.makeApiClient(CoreV1Api);
    const apps = kc.makeApiClient(AppsV1Api);
    const replicas = (await webhookAvailable(kc)).spec?.replicas ?? 1;
    // The config the webhook reads, as the landscape wrote it into its ConfigMap.
    const configText = sources.configMapData['rt-bootstrapper-config.json'];
    assert.ok(configText !== undefined);
    const config = parseWebhookConfig(JSON.parse(configText));
    const manifests = admissionPolicyManifestList(
      renderAdmissionPolicy(config, { apiVersion: POLICY_API, trustBundleMount: false }),
    );
    await createRewritingNamespace(core, POLICY_NAMESPACE);
    try {
      // The webhook copies the pull Secret into the namespace with its first Pod there; the
      // policy only adds the reference (docs/admission-policy.md).
      const first = await createMutatedPod(core, POLICY_NAMESPACE, 'first', (name) =>
        httpPod(name, l.openImage),
      );
      await core.deleteNamespacedPod({
        name: first.metadata?.name ?? '',
        namespace: POLICY_NAMESPACE,
        gracePeriodSeconds: 0,
      });
      await applyObjects(kc, manifests);
      const failedOpen = (): Promise<number> =>
        apiServerMetric(l.plane.cluster('runtime'), 'apiserver_admission_webhook_fail_open_count', {
          name: MUTATING_WEBHOOK_NAME,
        });
      const failedOpenBefore = await failedOpen();

      await scaleToZero(kc);
      // Only the policy can mutate now: a dry-run probe tells when it is in force.
      await eventually(
        async () => {
          const probe = await core.createNamespacedPod({
            namespace: POLICY_NAMESPACE,
            body: httpPod('probe', l.openImage),
            dryRun: 'All',
          });
          return probe.metadata?.annotations?.[ANNOTATION_DEFAULTED] === 'true' ? true : undefined;
        },
        60_000,
        'the policy in force',
        POLL_MS,
      );
      await apps.createNamespacedDeployment({
        namespace: POLICY_NAMESPACE,
        body: appDeployment(l.openImage),
      });
      const pod = await eventually(
        async () => {
          const pods = (
            await core.listNamespacedPod({ namespace: POLICY_NAMESPACE, labelSelector: 'app=app' })
          ).items;
          return pods.length === 1 && pods[0] !== undefined && isReady(pods[0]) ? pods[0] : undefined;
        },
        POD_READY_MS,
        'the app’s Pod Ready',
        POLL_MS,
      );
      const image = pod.spec?.containers[0]?.image ?? '';
      t.diagnostic(`stored image ${image}`);
      assert.equal(image, l.openImage.replace(l.open.host, l.secured.host), 'its image rewritten');
      assert.deepEqual(
        pod.spec?.imagePullSecrets?.map((r) => r.name),
        [config.imagePullSecret.name],
      );
      assert.equal(pod.metadata?.annotations?.[ANNOTATION_DEFAULTED], 'true');
      assert.ok(isMutated(pod), 'marked modified');
      t.diagnostic(`fail-open calls meanwhile: ${(await failedOpen()) - failedOpenBefore}`);
      assert.equal(
        (
          await webhookPods(
            kc,
            await apps.readNamespacedDeployment({ name: WEBHOOK_DEPLOYMENT, namespace: RUNTIME_NAMESPACE }),
          )
        ).length,
        0,
        'no webhook Pod served meanwhile',
      );
    } finally {
      for (const m of manifests.slice(1).reverse())
        await kubeRequest(kc, { method: 'DELETE', path: objectPath(m) });
      await reshape(kc, replicas, []);
      await webhookAvailable(kc);
    }
  });
});
