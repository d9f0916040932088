/**
 * Rollouts that see the workloads, on a real node (DESIGN §11): direct mode installs the webhook
 * on the canary runtime (the node; its Pods run from the open registry) and on a second runtime
 * (no node, its Deployment made available). A Pod runs on the canary from the open registry,
 * rewritten to the secured one. Changes of the landscape then point the open registry at a
 * mirror that lacks the image, or give wrong credentials, or a good set: the canary's webhook
 * checks (preflight) from inside its Pod, through the registries' addresses on the node's IP, or
 * follows the Pods created under the new revision, and the rollout halts and rolls back, or
 * completes.
 */
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import {
  newRolloutPolicy,
  rolloutPolicyPath,
  type RolloutPolicyResource,
  type RolloutPolicySpec,
} from '../../src/api/rollout-policy.js';
import { rolloutPolicyCrd } from '../../src/api/rollout-policy-crd.js';
import { newRuntimeBootstrapper, type RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { FEATURE_ADD_IMG_PULL_SECRET, FEATURE_ALTER_IMG_REGISTRY } from '../../src/api/webhook-features.js';
import { REVISION_ANNOTATION } from '../../src/api/workload-health.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { runStatus } from '../../src/cli/commands/status-action.js';
import { startDirectMode } from '../../src/controller/direct/direct-mode.js';
import type { DirectMode } from '../../src/controller/direct/direct-mode-options.js';
import type { SourceWatcher } from '../../src/controller/sources/source-watcher.js';
import { eventually } from '../../src/envtest/eventually.js';
import { LocalRegistry } from '../../src/envtest/local-registry.js';
import { applyObjects } from '../../src/kube/apply.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { HOST_IP_REFERENCE } from '../../src/render/webhook-options.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { packageVersion } from '../../src/version.js';
import {
  KCP_PULL_SECRET,
  RB_PATH,
  asWebhookServiceAccount,
  directModeOptions,
  keepDeploymentsAvailable,
  prepareKcp,
  putAdminKubeconfigSecret,
  putKcpConfig,
  startKcpSources,
} from '../support/kcp.js';
import { useNodeLandscape, type NodeLandscape } from './support/node-landscape.js';
import { httpPod, POD_READY_MS, readyPod } from './support/pods.js';
import { startTestWebhook, type TestWebhook } from '../support/webhook.js';
import { e2eConfigText, webhookAvailable } from './support/webhook-on-node.js';

const CANARY = 'runtime';
const OTHER = 'rt-b';
const APPS = 'apps';
const POLICY: RolloutPolicySpec = {
  waves: [{ name: 'canary', selector: { matchLabels: { canary: 'true' } }, soak: '20s' }],
  failureThreshold: 0,
  healthDeadline: '4m',
  autoRollback: true,
  workloads: { toleratedFailures: 0, observeFor: '5s', preflight: true },
};

let mirror: LocalRegistry | undefined;
let mirrorDir = '';
let sources: SourceWatcher | undefined;
let direct: DirectMode | undefined;
let stopAvailable: (() => void) | undefined;
let otherWebhook: TestWebhook | undefined;
const landscape = useNodeLandscape(
  async (l) => {
    const node = l.plane.cluster(CANARY).node;
    if (!node) throw new Error('the canary has no node');
    // A mirror that holds nothing: the kubelet may pull from it, and fails.
    mirrorDir = await mkdtemp(join(tmpdir(), 'rtb-e2e-mirror-'));
    mirror = await LocalRegistry.start({ dir: mirrorDir });
    await node.addPlainHttpRegistry(mirror.host);
    // The webhook's Pods reach the registries on their node's IP (they cannot reach loopback),
    // which Kubernetes puts into their args.
    const servers: Record<string, string> = {};
    for (const r of [l.open, l.secured, mirror]) {
      const port = Number(r.host.split(':')[1]);
      await node.exposeToPods(port);
      servers[r.host] = `http://${HOST_IP_REFERENCE}:${port}`;
    }

    const kcp = l.plane.cluster('kcp');
    await prepareKcp(kcp);
    await putKcpConfig(kcp, configText(l, l.secured.host));
    await putPullSecret(l, l.secured.dockerConfigJson());
    await ensureCrds(kcp.kubeConfig(), [rolloutPolicyCrd()]);
    await kubeRequest(kcp.kubeConfig(), {
      method: 'POST',
      path: rolloutPolicyPath(),
      body: newRolloutPolicy(POLICY),
    });
    for (const id of [CANARY, OTHER]) await putAdminKubeconfigSecret(kcp, l.plane.cluster(id), id);
    sources = await startKcpSources(kcp, silentLogger());
    direct = await startDirectMode(
      directModeOptions(kcp, sources, silentLogger(), {
        release: { image: l.openImage, version: packageVersion(), registryServers: servers },
        rollout: { policyName: 'default', autoRollback: true },
      }),
    );
    // The second runtime has no node: its webhook Deployment is made available as a kubelet would.
    stopAvailable = keepDeploymentsAvailable(() => [l.plane.cluster(OTHER)]);
    for (const id of [CANARY, OTHER])
      await kubeRequest(kcp.kubeConfig(), {
        method: 'POST',
        path: RB_PATH,
        body: newRuntimeBootstrapper(id, 'kcp-system', { labels: id === CANARY ? { canary: 'true' } : {} }),
      });
    // Its webhook runs in this process, with its ServiceAccount's rights, reporting what it serves.
    const other = l.plane.cluster(OTHER);
    await eventually(
      async () => ((await readRb(OTHER)).status?.state === 'Ready' ? true : undefined),
      120_000,
      `${OTHER} Ready`,
    );
    otherWebhook = await startTestWebhook(other, {
      kubeConfig: await asWebhookServiceAccount(other),
      statusConfigMap: { namespace: 'kyma-system', name: WEBHOOK_STATUS_CONFIG_MAP },
    });
  },
  CANARY,
  ['kcp', OTHER],
);
after(async () => {
  stopAvailable?.();
  await otherWebhook?.stop();
  await direct?.stop();
  await sources?.stop();
  await mirror?.stop();
  if (mirrorDir) await rm(mirrorDir, { recursive: true, force: true });
});

/** The e2e config with the open registry's images sent to `target`. */
function configText(l: NodeLandscape, target: string, extra: Record<string, unknown> = {}): string {
  const c = JSON.parse(e2eConfigText(l)) as { overrides: Record<string, string> } & Record<string, unknown>;
  return JSON.stringify({ ...c, ...extra, overrides: { ...c.overrides, [l.open.host]: target } });
}

async function putPullSecret(l: NodeLandscape, dockerConfigJson: string): Promise<void> {
  await applyObjects(l.plane.cluster('kcp').kubeConfig(), [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: KCP_PULL_SECRET, namespace: 'kcp-system' },
      type: 'kubernetes.io/dockerconfigjson',
      data: { '.dockerconfigjson': Buffer.from(dockerConfigJson).toString('base64') },
    } as never,
  ]);
}

const mirrorHost = (): string => mirror?.host ?? assert.fail('the mirror is not started');
const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const kcpConfig = () => landscape().plane.cluster('kcp').kubeConfig();
const core = (): CoreV1Api => landscape().plane.cluster(CANARY).kubeConfig().makeApiClient(CoreV1Api);
const readPolicy = () =>
  kubeRequest<RolloutPolicyResource>(kcpConfig(), { method: 'GET', path: rolloutPolicyPath('default') });
const readRb = (id: string) =>
  kubeRequest<RuntimeBootstrapper>(kcpConfig(), { method: 'GET', path: `${RB_PATH}/${id}` });
const patchPolicy = (spec: Partial<RolloutPolicySpec>) =>
  kubeRequest(kcpConfig(), { method: 'PATCH', path: rolloutPolicyPath('default'), body: { spec } });
const statusText = () =>
  runStatus({ namespace: 'kcp-system', rolloutPolicy: 'default', output: 'text' }, kcpConfig());

/** Waits until the sources hold a set other than `previous`; returns it. */
const nextVersion = (previous: string): Promise<string> =>
  eventually(() => {
    const v = sources?.snapshot().version;
    return v !== undefined && v !== previous ? v : undefined;
  });

/**
 * Waits for the rollout's phase with set `target` as its target; returns the policy. Timed out,
 * it says where the rollout and the canary stood.
 */
async function phase(wanted: string, target: string, timeoutMs = 240_000): Promise<RolloutPolicyResource> {
  try {
    return await eventually(
      async () => {
        const p = await readPolicy();
        return p.status?.phase === wanted && p.status.target?.split('/')[0] === target ? p : undefined;
      },
      timeoutMs,
      `the rollout of ${target} ${wanted}`,
    );
  } catch (error) {
    const { phase: at, target: held, message } = (await readPolicy()).status ?? {};
    const { appliedVersion, servedVersion, preflight, preflightCandidate } =
      (await readRb(CANARY)).status ?? {};
    throw new Error(
      `the rollout of ${target} is not ${wanted}: ${JSON.stringify({ at, held, message, appliedVersion, servedVersion, preflight, preflightCandidate })}`,
      { cause: error },
    );
  }
}

/** The set version both runtimes hold (the stable one), once they do. */
const appliedEverywhere = async (version: string): Promise<void> => {
  await eventually(
    async () => {
      for (const id of [CANARY, OTHER])
        if ((await readRb(id)).status?.appliedVersion !== version) return undefined;
      return true;
    },
    240_000,
    `both runtimes at ${version}`,
  );
};

/** A Pod of the apps namespace from the open registry (every feature of the namespace applies). */
async function createAppPod(name: string, o: { image?: string; crash?: boolean } = {}): Promise<V1Pod> {
  const l = landscape();
  const pod = httpPod(name, o.image ?? l.openImage, { pullAlways: true });
  const container = pod.spec?.containers[0];
  if (o.crash && container) {
    container.args = ['setTimeout(() => process.exit(3), 500)'];
    delete container.readinessProbe;
  }
  return core().createNamespacedPod({ namespace: APPS, body: pod });
}

describe('rollouts that see the workloads on a real node', () => {
  let stable = '';

  test('the fleet installs, and a Pod from the open registry runs on the canary, rewritten and stamped', async () => {
    const l = landscape();
    await webhookAvailable(l.plane.cluster(CANARY).kubeConfig());
    stable = sources?.snapshot().version ?? '';
    await appliedEverywhere(stable);
    await phase('Complete', stable);
    await core().createNamespace({
      body: {
        metadata: {
          name: APPS,
          annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'true', [FEATURE_ADD_IMG_PULL_SECRET]: 'true' },
        },
      },
    });
    const created = await eventually(
      async () => {
        const name = `running-${Date.now() % 100000}`;
        const pod = await createAppPod(name);
        if (pod.metadata?.annotations?.[REVISION_ANNOTATION] !== undefined) return pod;
        await core().deleteNamespacedPod({ name, namespace: APPS });
        return undefined;
      },
      60_000,
      'a Pod admitted by the webhook',
    );
    assert.equal(created.metadata?.annotations?.[REVISION_ANNOTATION], stable);
    assert.ok((created.spec?.containers[0]?.image ?? '').startsWith(l.secured.host));
    await readyPod(core(), APPS, created.metadata.name ?? '');
  });

  test('a mirror that lacks the running image: the canary’s preflight names it, nobody gets the set', async () => {
    const l = landscape();
    const started = Date.now();
    await putKcpConfig(l.plane.cluster('kcp'), configText(l, mirrorHost()));
    const target = await nextVersion(stable);
    const halted = await phase('Halted', target);
    const tookMs = Date.now() - started;
    assert.match(halted.status?.haltReason ?? '', new RegExp(escaped(mirrorHost())));
    for (const id of [CANARY, OTHER]) assert.equal((await readRb(id)).status?.appliedVersion, stable, id);
    const canary = await readRb(CANARY);
    assert.equal(canary.status?.preflight?.version, target);
    assert.ok(canary.status.preflight.missing > 0);
    assert.match(await statusText(), new RegExp(escaped(mirrorHost())));
    console.log(`preflight: the bad change halted ${tookMs} ms after it was written, before any wave`);
  });

  test('without the preflight: a Pod created under the new revision fails to pull, the rollout halts and rolls back', async () => {
    const l = landscape();
    await patchPolicy({ workloads: { ...POLICY.workloads, preflight: false } });
    const started = Date.now();
    const before = sources?.snapshot().version ?? '';
    await putKcpConfig(l.plane.cluster('kcp'), configText(l, mirrorHost(), { namespaceFeatures: {} }));
    const target = await nextVersion(before);
    await eventually(
      async () => ((await readRb(CANARY)).status?.servedVersion === target ? true : undefined),
      120_000,
      'the canary serves the new set',
    );
    const broken = await eventually(
      async () => {
        const pod = await createAppPod(`restarted-${Date.now() % 100000}`);
        return pod.metadata?.annotations?.[REVISION_ANNOTATION] === target ? pod : undefined;
      },
      30_000,
      'a Pod under the new revision',
    );
    assert.ok((broken.spec?.containers[0]?.image ?? '').startsWith(mirrorHost()));
    const halted = await phase('Halted', target);
    console.log(`workload health: the change halted ${Date.now() - started} ms after it was written`);
    assert.match(halted.status?.haltReason ?? '', new RegExp(escaped(mirrorHost())));
    // Rolled back: the canary holds the stable set again, the other runtime never left it.
    await appliedEverywhere(stable);
    await eventually(
      async () => ((await readRb(CANARY)).status?.servedVersion === stable ? true : undefined),
      120_000,
      'the canary serves the stable set again',
    );
    const after = await createAppPod(`after-${Date.now() % 100000}`);
    assert.equal(after.metadata?.annotations?.[REVISION_ANNOTATION], stable);
    await readyPod(core(), APPS, after.metadata.name ?? '');
  });

  test('wrong credentials for the registry: the preflight finds them refused, nobody gets the set', async () => {
    const l = landscape();
    await patchPolicy({ workloads: POLICY.workloads });
    await putKcpConfig(l.plane.cluster('kcp'), configText(l, l.secured.host));
    const wrong = JSON.stringify({
      auths: { [l.secured.host]: { auth: Buffer.from('rtb-e2e:wrong').toString('base64') } },
    });
    await putPullSecret(l, wrong);
    // The config back as stable has it, the pull Secret wrong: the set of both.
    const target = await eventually(async () => {
      const v = sources?.snapshot().version;
      const s = await kubeRequest<{ data?: Record<string, string> }>(kcpConfig(), {
        method: 'GET',
        path: `/api/v1/namespaces/kcp-system/secrets/${KCP_PULL_SECRET}`,
      });
      const held = Buffer.from(s.data?.['.dockerconfigjson'] ?? '', 'base64').toString('utf8');
      return held === wrong && v !== undefined && v !== stable ? v : undefined;
    });
    const halted = await phase('Halted', target);
    assert.match(halted.status?.haltReason ?? '', /refused|credentials|401|403/i);
    const canary = await readRb(CANARY);
    assert.equal(canary.status?.preflight?.version, target);
    assert.ok(canary.status.preflight.refused > 0);
    for (const id of [CANARY, OTHER]) assert.equal((await readRb(id)).status?.appliedVersion, stable, id);
  });

  test('a good set completes; a crash loop and an image nobody rewrote are not counted', async () => {
    const l = landscape();
    const started = Date.now();
    // The right credentials, and one more registry: a new pull Secret, so a preflight runs.
    const good = JSON.parse(l.secured.dockerConfigJson()) as { auths: Record<string, unknown> };
    good.auths[mirrorHost()] = { auth: Buffer.from('anyone:any').toString('base64') };
    const before = sources?.snapshot().version ?? '';
    await putPullSecret(l, JSON.stringify(good));
    const target = await nextVersion(before);
    await eventually(
      async () => ((await readRb(CANARY)).status?.servedVersion === target ? true : undefined),
      120_000,
      'the canary serves the good set',
    );
    const preflightDone = Date.now();
    const crash = await createAppPod(`crash-${Date.now() % 100000}`, { crash: true });
    const foreign = await createAppPod(`foreign-${Date.now() % 100000}`, {
      image: `${mirrorHost()}/nobody/rewrote:1`,
    });
    assert.equal(foreign.spec?.containers[0]?.image, `${mirrorHost()}/nobody/rewrote:1`);
    assert.equal(crash.metadata?.annotations?.[REVISION_ANNOTATION], target);
    await phase('Complete', target, POD_READY_MS);
    await appliedEverywhere(target);
    const workloads = (await readRb(CANARY)).status?.workloads;
    assert.equal(workloads?.revision, target);
    assert.equal(workloads.failedPods, 0);
    console.log(
      `a good set: preflight and the canary's first serve ${preflightDone - started} ms, complete after ${Date.now() - started} ms`,
    );
  });
});
