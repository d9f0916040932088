/**
 * KIM installs our webhook exactly as it installs upstream's today (test/support/kim-installer.ts
 * plays KIM's code): a fresh install, an upgrade over an upstream install, a release upgrade
 * through the version label, and a CA rotation while Pods are created. No kubelet runs here, so
 * the webhook's replicas run in this process under the ServiceAccount's identity, and the
 * deployment controller's report is simulated once they serve.
 */
import { AdmissionregistrationV1Api, AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT, WEBHOOK_TLS_SECRET } from '../../src/api/runtime-names.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { WEBHOOK_SERVING_POLICY, type ServingPolicy } from '../../src/serving-cert/serving-policy.js';
import { renderKimManifests } from '../../src/render/kim-manifests.js';
import { ADMISSION_POLICY_NAME } from '../../src/render/admission-policy.js';
import { ADMISSION_POLICY_FIELD_MANAGER } from '../../src/api/admission-path-report.js';
import { defaultKubernetesVersion, KUBERNETES_VERSIONS } from '../../src/envtest/kubernetes-versions.js';
import type { WebhookAppOptions } from '../../src/webhook/webhook-app.js';
import { useControlPlane } from '../support/control-plane.js';
import { getIfExists } from '../support/get-if-exists.js';
import { eventually } from '../../src/envtest/eventually.js';
import { seedConfigText } from '../support/fixtures.js';
import { dockerConfig } from '../support/kcp.js';
import {
  gardenerCertManagementCrds,
  UPSTREAM_NAMESPACES,
  upstreamInstallText,
} from '../support/upstream-install.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { kimConfigure, kimInstall, kimStatus, type KimSources } from '../support/kim-installer.js';
import {
  caBundle,
  handshake,
  ourConfiguration,
  simulateRollout,
  createSeedPod,
  registerByUrl,
  startReplica as startSupportReplica,
  type Replica,
} from '../support/webhook-replicas.js';

// Whatever minor runs here, its API server serves MutatingAdmissionPolicy (the last test).
const { api: policyApi, apiserverArgs } = KUBERNETES_VERSIONS[defaultKubernetesVersion()].admissionPolicy;
const POLICY_API = `admissionregistration.k8s.io/${policyApi}`;
const plane = useControlPlane({ clusters: ['fresh', 'upstream'], apiserverArgs });
const IMAGE = 'europe-docker.pkg.dev/kyma-project/prod/rt-bootstrapper:1.0.0';
const SOURCES: KimSources = {
  configMapData: { 'rt-bootstrapper-config.json': seedConfigText() },
  pullSecret: { type: 'kubernetes.io/dockerconfigjson', data: dockerConfig('kim') },
};

const running: Replica[] = [];
// The product's policy but for the settle: the API server's informer delivers a caBundle within
// about a second, and the product's 20 s margin would make each install wait for nothing.
const QUICK_SETTLE: ServingPolicy = { ...WEBHOOK_SERVING_POLICY, settleMs: 2_000 };

after(async () => {
  await Promise.all(running.map((r) => r.app.stop()));
});

async function startReplica(
  cluster: LocalCluster,
  identity: string,
  policy: ServingPolicy = QUICK_SETTLE,
  admissionPolicy?: WebhookAppOptions['admissionPolicy'],
): Promise<Replica> {
  const replica = await startSupportReplica(cluster, identity, { policy, admissionPolicy });
  running.push(replica);
  return replica;
}

/** A URL registration beside ours, trusting our caBundle; returns its name. */
async function registerBesideByUrl(cluster: LocalCluster, port: number): Promise<string> {
  const api = cluster.kubeConfig().makeApiClient(AdmissionregistrationV1Api);
  const ours = await ourConfiguration(cluster);
  const hook = ours.webhooks?.[0];
  assert.ok(hook);
  const name = 'kim-test-by-url';
  await api.createMutatingWebhookConfiguration({
    body: {
      metadata: { name },
      webhooks: [
        {
          ...hook,
          name: 'by-url.rt-bootstrapper.test',
          failurePolicy: 'Fail',
          clientConfig: {
            url: `https://127.0.0.1:${port}/mutate--v1-pod`,
            ...(hook.clientConfig.caBundle ? { caBundle: hook.clientConfig.caBundle } : {}),
          },
        },
      ],
    },
  });
  return name;
}

describe('KIM installs rt-bootstrapper as it installs upstream today', () => {
  test('a fresh install: NotStarted, InProgress, Ready; the certificate verifies against the caBundle alone', async () => {
    const cluster = plane().cluster('fresh');
    const kc = cluster.kubeConfig();
    const manifests = renderKimManifests({ image: IMAGE, version: '1.0.0' }).text;
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: RUNTIME_NAMESPACE } } });
    await kimConfigure(kc, SOURCES);
    assert.equal(await kimStatus(kc, manifests), 'NotStarted');
    await kimInstall(kc, manifests);

    const replicas = [await startReplica(cluster, 'fresh-a'), await startReplica(cluster, 'fresh-b')];
    await simulateRollout(cluster, replicas);
    assert.equal(await kimStatus(kc, manifests), 'Ready');

    const bundle = await eventually(() => caBundle(cluster), 20_000, 'the caBundle');
    for (const r of replicas) assert.ok(await handshake(r.app.port, bundle), `${r.identity} verifies`);
    assert.equal(replicas.filter((r) => r.app.isCertWriter()).length, 1, 'exactly one writer');

    // Beside ours, not instead: KIM applies ours again in the next test.
    const beside = await registerBesideByUrl(cluster, replicas[0]?.app.port ?? 0);
    const pod = await eventually(
      async () => {
        const p = await createSeedPod(cluster, `fresh-${Date.now()}`);
        return p.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/modified'] === 'true'
          ? p
          : undefined;
      },
      20_000,
      'a Pod mutated through the API server',
    );
    assert.equal(pod.spec?.containers[0]?.image, 'ghcr.io/app:1');
    await kc.makeApiClient(AdmissionregistrationV1Api).deleteMutatingWebhookConfiguration({ name: beside });
  });

  test('a release upgrade through the version label: UpgradeNeeded, install, Ready', async () => {
    const cluster = plane().cluster('fresh');
    const kc = cluster.kubeConfig();
    const next = renderKimManifests({ image: IMAGE.replace('1.0.0', '1.1.0'), version: '1.1.0' }).text;
    assert.equal(await kimStatus(kc, next), 'UpgradeNeeded');
    await kimInstall(kc, next);
    const d = await kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: WEBHOOK_DEPLOYMENT, namespace: RUNTIME_NAMESPACE });
    assert.equal(d.metadata?.labels?.['app.kubernetes.io/version'], '1.1.0');
    await simulateRollout(
      cluster,
      running.filter((r) => r.identity.startsWith('fresh-')),
    );
    assert.equal(await kimStatus(kc, next), 'Ready');
  });

  test('an upgrade over an upstream install: one webhook, upstream leftovers removed, the Deployment taken over', async () => {
    const cluster = plane().cluster('upstream');
    const kc = cluster.kubeConfig();
    for (const name of UPSTREAM_NAMESPACES)
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    // Upstream as KIM installed it (the same installer), on a landscape with Gardener's CRDs.
    await ensureCrds(kc, gardenerCertManagementCrds());
    await kimInstall(kc, upstreamInstallText());
    await kimConfigure(kc, SOURCES);

    const ours = renderKimManifests({ image: IMAGE, version: '1.0.0' }).text;
    assert.equal(await kimStatus(kc, ours), 'Failed', 'upstream never reports available here');
    await kimInstall(kc, ours);
    const replicas = [await startReplica(cluster, 'upstream-a')];
    await simulateRollout(cluster, replicas);
    assert.equal(await kimStatus(kc, ours), 'Ready');

    const admission = kc.makeApiClient(AdmissionregistrationV1Api);
    const podHooks = (await admission.listMutatingWebhookConfiguration()).items.flatMap((c) =>
      (c.webhooks ?? []).filter((w) => (w.rules ?? []).some((r) => r.resources?.includes('pods'))),
    );
    assert.deepEqual(
      podHooks.map((w) => w.name),
      ['mpod-v1.kb.io'],
      'exactly one mutating webhook acts on Pods',
    );
    assert.equal(podHooks[0]?.clientConfig.service?.path, '/mutate--v1-pod');

    const d = await kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: WEBHOOK_DEPLOYMENT, namespace: RUNTIME_NAMESPACE });
    const containers = d.spec?.template.spec?.containers ?? [];
    assert.deepEqual(
      containers.map((c) => c.name),
      ['manager'],
      "one container: ours replaced upstream's",
    );
    assert.notDeepEqual(containers[0]?.command, ['/manager']);

    const core = kc.makeApiClient(CoreV1Api);
    await eventually(
      async () => {
        const services = (await core.listNamespacedService({ namespace: RUNTIME_NAMESPACE })).items.map(
          (s) => s.metadata?.name,
        );
        return services.includes('rt-bootstrapper-controller-manager-metrics-service') ? undefined : services;
      },
      20_000,
      "upstream's metrics Service (port 8443, nothing answers there) removed",
    );
  });

  test('a CA rotation while Pods are being created: no failed call', async () => {
    const cluster = plane().cluster('upstream');
    const fast: ServingPolicy = {
      servingLifetimeMs: 60_000,
      servingRenewFraction: 1 / 3,
      caLifetimeMs: 16_000,
      caRotateFraction: 1 / 2,
      settleMs: 1_500,
      overlapMs: 3_000,
    };
    for (const r of running.filter((x) => x.identity.startsWith('upstream-'))) {
      running.splice(running.indexOf(r), 1);
      await r.app.stop();
    }
    // A CA of the fast policy's life: the default one of the replicas before lives a year.
    await cluster
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .deleteNamespacedSecret({ name: WEBHOOK_TLS_SECRET, namespace: RUNTIME_NAMESPACE });
    const replica = await startReplica(cluster, 'rotate-a', fast);
    await eventually(() => (replica.app.ready() ? true : undefined), 30_000, 'the replica ready');
    await registerByUrl(cluster, replica.app.port);
    const first = await eventually(() => caBundle(cluster), 20_000, 'the caBundle');

    let created = 0;
    const failures: string[] = [];
    let rotated = false;
    const deadline = Date.now() + 40_000;
    while (Date.now() < deadline && !rotated) {
      try {
        const p = await createSeedPod(cluster, `rotate-${created}`);
        created += 1;
        if (p.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/modified'] !== 'true')
          failures.push(`rotate-${created} not mutated`);
      } catch (error) {
        failures.push(String(error).split('\n')[0] ?? '');
      }
      const now = await caBundle(cluster);
      rotated = now !== undefined && !now.includes(first.trim());
    }
    assert.ok(rotated, 'the first CA left the caBundle');
    assert.ok(created > 10, `created ${created} Pods`);
    assert.deepEqual(failures, []);
  });

  test("KIM's manifests on a runtime serving MutatingAdmissionPolicy: the agent installs the policy as its ServiceAccount, and Pods are mutated with no replica serving", async () => {
    const cluster = plane().cluster('fresh');
    const kc = cluster.kubeConfig();
    // The Deployment as KIM applied it tells the agent to install (one manifest set for every minor).
    const d = await kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: WEBHOOK_DEPLOYMENT, namespace: RUNTIME_NAMESPACE });
    const args = d.spec?.template.spec?.containers[0]?.args ?? [];
    assert.ok(args.includes('--admission-policy=install'), args.join(' '));
    for (const r of running.filter((x) => x.identity.startsWith('fresh-'))) {
      running.splice(running.indexOf(r), 1);
      await r.app.stop();
    }
    const agent = await startReplica(cluster, 'policy-a', undefined, { install: true });
    const policyPath = `/apis/${POLICY_API}/mutatingadmissionpolicies/${ADMISSION_POLICY_NAME}`;
    const bindingPath = `/apis/${POLICY_API}/mutatingadmissionpolicybindings/${ADMISSION_POLICY_NAME}`;
    type Managed = { metadata?: { managedFields?: { manager?: string }[] } };
    const managers = async (path: string): Promise<string[] | undefined> => {
      const o = await getIfExists<Managed>(kc, path);
      return o === undefined ? undefined : (o.metadata?.managedFields ?? []).map((f) => f.manager ?? '');
    };
    await eventually(
      async () => ((await managers(bindingPath)) === undefined ? undefined : true),
      60_000,
      'the agent to install the policy and its binding',
    );
    for (const path of [policyPath, bindingPath])
      assert.deepEqual(await managers(path), [ADMISSION_POLICY_FIELD_MANAGER], path);

    // No replica answers now: our registration fails open, and only the policy can mutate.
    running.splice(running.indexOf(agent), 1);
    await agent.app.stop();
    const pod = await eventually(
      async () => {
        const p = await kc.makeApiClient(CoreV1Api).createNamespacedPod({
          namespace: RUNTIME_NAMESPACE,
          dryRun: 'All',
          body: {
            metadata: { name: 'through-the-policy' },
            spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }] },
          },
        });
        return p.spec?.containers[0]?.image === 'ghcr.io/app:1' ? p : undefined;
      },
      30_000,
      'a Pod mutated by the policy',
    );
    assert.equal(pod.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/defaulted'], 'true');
  });
});
