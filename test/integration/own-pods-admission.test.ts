// test-matrix: kubernetes
/**
 * The webhook's own Pods and a tenant's Pod carrying their label, through a real API server, for
 * the webhook registration and for the admission policy: only Pods labelled
 * `app.kubernetes.io/name: rt-bootstrapper` in the webhook's namespace (kyma-system) are left
 * out; the label on a Pod anywhere else is a namespace user's and no way out of admission
 * (docs/kcp-trust-boundary.md). 1.37 serves the policy as v1; 1.34 as v1beta1 behind its gate.
 */
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  type V1MutatingWebhookConfiguration,
  type V1Pod,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseWebhookConfig } from '../../src/api/webhook-config.js';
import { ANNOTATION_DEFAULTED } from '../../src/api/webhook-features.js';
import { MUTATING_WEBHOOK_CONFIGURATION } from '../../src/api/runtime-names.js';
import { eventually } from '../../src/envtest/eventually.js';
import { defaultKubernetesVersion, KUBERNETES_VERSIONS } from '../../src/envtest/kubernetes-versions.js';
import { applyObjects } from '../../src/kube/apply.js';
import { admissionPolicyManifestList, renderAdmissionPolicy } from '../../src/render/admission-policy.js';
import { renderWebhookManifests } from '../../src/render/webhook-manifests.js';
import { useControlPlane } from '../support/control-plane.js';
import { seedConfigText } from '../support/fixtures.js';
import { registerWebhook, startTestWebhook, type TestWebhook } from '../support/webhook.js';

const version = defaultKubernetesVersion();
const { api, apiserverArgs } = KUBERNETES_VERSIONS[version].admissionPolicy;
const plane = useControlPlane({ clusters: ['runtime'], apiserverArgs });

const OWN = 'kyma-system';
const TENANT = 'tenant';
const OURS = { 'app.kubernetes.io/name': 'rt-bootstrapper' };
const FIPS = 'rt-cfg.kyma-project.io/set-fips-mode';
const REGISTRY = 'rt-cfg.kyma-project.io/alter-img-registry';

/** A Pod that opts into two features (kyma-system has them all by the seed config anyway). */
const pod = (prefix: string, labels?: Record<string, string>): V1Pod => ({
  metadata: { generateName: `${prefix}-`, labels, annotations: { [FIPS]: 'true', [REGISTRY]: 'true' } },
  spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }] },
});
const mutated = (p: V1Pod): boolean => p.metadata?.annotations?.[ANNOTATION_DEFAULTED] === 'true';

describe(`the webhook's own Pods and a tenant's Pod labelled as them (Kubernetes ${version})`, () => {
  let core: CoreV1Api;
  let registrations: AdmissionregistrationV1Api;
  let webhook: TestWebhook | undefined;
  const create = (namespace: string, body: V1Pod, dryRun = false): Promise<V1Pod> =>
    core.createNamespacedPod({ namespace, body, dryRun: dryRun ? 'All' : undefined });

  /**
   * Whatever admits here: a tenant's Pod labelled ours is mutated, kyma-system is admitted, and our
   * own Pod there is left out. Returns the tenant's Pod as stored.
   */
  async function onlyOursExempt(): Promise<V1Pod> {
    const tenant = await create(TENANT, pod('tenant', OURS));
    assert.ok(mutated(tenant), 'a tenant Pod labelled ours is mutated');
    assert.equal(tenant.spec?.containers[0]?.image, 'ghcr.io/app:1');
    assert.ok(
      mutated(await create(OWN, pod('other'))),
      'kyma-system is admitted: the exemption is ours alone',
    );
    const own = await create(OWN, pod('own', OURS));
    assert.equal(mutated(own), false, 'our own Pod in kyma-system is left out');
    assert.equal(own.spec?.containers[0]?.image, 'replace.me/app:1');
    return tenant;
  }

  before(async () => {
    const kc = plane().cluster('runtime').kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    registrations = kc.makeApiClient(AdmissionregistrationV1Api);
    for (const name of [OWN, TENANT]) await core.createNamespace({ body: { metadata: { name } } });
    await core.createNamespacedSecret({
      namespace: OWN,
      body: {
        metadata: { name: 'registry-credentials' },
        type: 'kubernetes.io/dockerconfigjson',
        data: { '.dockerconfigjson': Buffer.from('{"auths":{}}').toString('base64') },
      },
    });
    await core.createNamespacedConfigMap({
      namespace: OWN,
      body: {
        metadata: { name: 'rt-bootstrapper-config' },
        data: { 'rt-bootstrapper-config.json': seedConfigText() },
      },
    });
  });

  after(async () => {
    await webhook?.stop();
  });

  test('the webhook: a tenant Pod labelled ours is mutated (also after an apply over upstream’s registration), our own Pods in kyma-system never reach it', async () => {
    const cluster = plane().cluster('runtime');
    webhook = await startTestWebhook(cluster);
    const ours = renderWebhookManifests({
      image: 'unused',
      url: webhook.url,
      caBundlePem: webhook.ca.certPem,
      // An error, or a call nobody answers, refuses the Pod: nothing passes by failing open.
      failurePolicy: 'Fail',
    }).mutatingWebhookConfiguration;
    // Upstream's registration as an install being taken over has it, written by another client:
    // its objectSelector leaves out the label in every namespace.
    const hook = ours.webhooks![0]!;
    const { matchConditions: _none, ...upstreamHook } = hook;
    const upstream: V1MutatingWebhookConfiguration = {
      metadata: { name: MUTATING_WEBHOOK_CONFIGURATION },
      webhooks: [
        {
          ...upstreamHook,
          objectSelector: {
            matchExpressions: [
              { key: 'app.kubernetes.io/name', operator: 'NotIn', values: ['rt-bootstrapper'] },
            ],
          },
        },
      ],
    };
    await registerWebhook(cluster, upstream, pod('probe'));
    assert.equal(mutated(await create(TENANT, pod('escaped', OURS))), false, 'the hole this closes');

    // Ours, applied over it as direct mode and KIM apply it (server-side, forced).
    await applyObjects(cluster.kubeConfig(), [ours]);
    const stored = await registrations.readMutatingWebhookConfiguration({
      name: MUTATING_WEBHOOK_CONFIGURATION,
    });
    const storedHook = JSON.parse(JSON.stringify(stored.webhooks?.[0])) as typeof hook;
    assert.deepEqual(
      storedHook.objectSelector,
      {},
      "upstream's selector is replaced, not left to its writer",
    );
    assert.deepEqual(storedHook.matchConditions, hook.matchConditions);
    await eventually(
      async () => (mutated(await create(TENANT, pod('wait', OURS), true)) ? true : undefined),
      20_000,
      'the API server to use the applied registration',
    );

    const tenant = await onlyOursExempt();
    // Its UPDATEs are seen too: an image changed in place is rewritten.
    const spec = tenant.spec;
    const first = spec?.containers[0];
    assert.ok(spec && first);
    const changed = { ...tenant, spec: { ...spec, containers: [{ ...first, image: 'replace.me/app:2' }] } };
    const updated = await core.replaceNamespacedPod({
      name: tenant.metadata!.name!,
      namespace: TENANT,
      body: changed,
    });
    assert.equal(updated.spec?.containers[0]?.image, 'ghcr.io/app:2');

    // With no replica answering and the registration failing closed: our own Pods are still
    // created (the webhook is not needed to start itself), a tenant's labelled Pod is not.
    await webhook.stop();
    webhook = undefined;
    assert.equal(mutated(await create(OWN, pod('own-down', OURS))), false);
    await assert.rejects(create(TENANT, pod('tenant-down', OURS)), (err: unknown) => {
      assert.match(String(err), /failed calling webhook|mpod-v1\.kb\.io/);
      return true;
    });
    await registrations.deleteMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
  });

  test(`the admission policy (${api}): a tenant Pod labelled ours is mutated, our own Pods in kyma-system are left alone`, async () => {
    const cluster = plane().cluster('runtime');
    // No webhook any more (also where the test before failed half-way): whatever changes a Pod
    // from here on is the policy.
    await webhook?.stop();
    webhook = undefined;
    await registrations
      .deleteMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION })
      .catch(() => undefined);
    await eventually(
      async () => (mutated(await create(TENANT, pod('nothing'), true)) ? undefined : true),
      20_000,
      'the API server to drop the webhook registration',
    );
    const config = parseWebhookConfig(JSON.parse(seedConfigText()));
    await applyObjects(
      cluster.kubeConfig(),
      admissionPolicyManifestList(
        renderAdmissionPolicy(config, { apiVersion: api, trustBundleMount: false }),
      ),
    );
    await eventually(
      async () => (mutated(await create(TENANT, pod('wait'), true)) ? true : undefined),
      60_000,
      'the policy and its binding in force',
    );

    await onlyOursExempt();
  });
});
