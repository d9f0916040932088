// test-matrix: kubernetes
/**
 * The admission policies that bound the webhook ServiceAccount's Secret writes
 * (src/render/webhook-secret-policy.ts), its webhook-configuration writes
 * (src/render/webhook-registration-policy.ts) and its admission-policy writes
 * (src/render/webhook-admission-policy-rights.ts) on a real API server: the rendered manifests applied
 * (with a pull Secret name of the landscape's, not the default), then the ServiceAccount (a client
 * certificate with its user name, so exactly the rendered RBAC and the policies apply) writes what
 * our code writes, through our own calls, and what an attacker holding its token would.
 */
import type { KubeConfig, KubernetesObject, V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { COPIED_FROM_ANNOTATION, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../src/api/managed-labels.js';
import {
  CA_BUNDLE_FIELD_MANAGER,
  MUTATING_WEBHOOK_CONFIGURATION,
  RUNTIME_NAMESPACE,
  VALIDATING_WEBHOOK_CONFIGURATION,
  WEBHOOK_SERVICE_ACCOUNT,
  WEBHOOK_TLS_SECRET,
} from '../../src/api/runtime-names.js';
import { UPSTREAM_ANNOTATIONS } from '../../src/api/upstream-leftovers.js';
import { PREFLIGHT_SECRET } from '../../src/api/workload-health.js';
import { eventually } from '../../src/envtest/eventually.js';
import { applyObjects } from '../../src/kube/apply.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { renderWebhookManifests, webhookManifestList } from '../../src/render/webhook-manifests.js';
import { WEBHOOK_REGISTRATION_POLICY } from '../../src/render/webhook-registration-policy.js';
import { WEBHOOK_SECRET_POLICY } from '../../src/render/webhook-secret-policy.js';
import {
  applyCaBundle,
  MUTATING,
  VALIDATING,
  type WebhookConfiguration,
} from '../../src/serving-cert/webhook-configurations.js';
import { putServingSecret } from '../../src/serving-cert/serving-secret-put.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { coreCalls } from '../../src/webhook/core-calls.js';
import {
  RenamedCopySweeper,
  renamedCopyCalls,
} from '../../src/runtime-agent/pull-secret/renamed-copy-sweeper.js';
import { removeUpstreamLeftovers } from '../../src/runtime-agent/upstream-cleanup.js';
import { createWebhookMetrics } from '../../src/webhook/webhook-metrics.js';
import { useControlPlane } from '../support/control-plane.js';
import { asWebhookServiceAccount } from '../support/kcp.js';
import { eventuallyFailsWith } from '../support/fails-with.js';
import { podNamingPullSecret } from '../support/pull-secret-user.js';
import { defaultKubernetesVersion, KUBERNETES_VERSIONS } from '../../src/envtest/kubernetes-versions.js';
import { FEATURE_ALL } from '../../src/api/webhook-features.js';
import { parseWebhookConfig } from '../../src/api/webhook-config.js';
import { ADMISSION_POLICY_NAME } from '../../src/render/admission-policy.js';
import { AdmissionPolicyInstaller } from '../../src/runtime-agent/admission-policy/admission-policy-installer.js';
import { WEBHOOK_ADMISSION_POLICY_POLICY } from '../../src/render/webhook-admission-policy-rights.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';

// MutatingAdmissionPolicy served on every version of the matrix (1.34: its gate).
const { api: policyVersion, apiserverArgs } = KUBERNETES_VERSIONS[defaultKubernetesVersion()].admissionPolicy;
const plane = useControlPlane({ clusters: ['runtime'], apiserverArgs });
/** A landscape's pull Secret name (not the default): the policy must carry the configured one. */
const PULL = 'landscape-pull';
const TENANT = 'tenant';
const DOCKER = 'kubernetes.io/dockerconfigjson';
const dockerData = { '.dockerconfigjson': Buffer.from('{"auths":{}}').toString('base64') };
const SECRETS_POLICY_SAYS = new RegExp(WEBHOOK_SECRET_POLICY);
const REGISTRATION_POLICY_SAYS = new RegExp(WEBHOOK_REGISTRATION_POLICY);
const POLICY_GROUP = `/apis/admissionregistration.k8s.io/${policyVersion}`;
const policiesPath = `${POLICY_GROUP}/mutatingadmissionpolicies`;
const bindingsPath = `${POLICY_GROUP}/mutatingadmissionpolicybindings`;

const secretsPath = (namespace: string): string => `/api/v1/namespaces/${namespace}/secrets`;
const mutatingPath = `${MUTATING.path}/${MUTATING_WEBHOOK_CONFIGURATION}`;
const validatingPath = `${VALIDATING.path}/${VALIDATING_WEBHOOK_CONFIGURATION}`;

const secret = (
  namespace: string,
  name: string,
  type: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, namespace, ...extra },
  type,
  data: type === DOCKER ? dockerData : { a: 'Yg==' },
});

describe('the least-privilege policies on a real API server: what the webhook ServiceAccount may write', () => {
  let admin: KubeConfig;
  let sa: KubeConfig;

  const post = (kc: KubeConfig, namespace: string, body: unknown): Promise<unknown> =>
    kubeRequest(kc, { method: 'POST', path: secretsPath(namespace), body, timeoutMs: 10_000 });
  const mergePatch = (kc: KubeConfig, path: string, body: unknown): Promise<unknown> =>
    kubeRequest(kc, {
      method: 'PATCH',
      path,
      body,
      contentType: 'application/merge-patch+json',
      timeoutMs: 10_000,
    });
  const read = <T>(kc: KubeConfig, path: string): Promise<T> =>
    kubeRequest<T>(kc, { method: 'GET', path, timeoutMs: 10_000 });
  /** The write is refused by the policy named `policy` (403 Forbidden or 422 Invalid). */
  const refused = async (what: string, policy: RegExp, p: Promise<unknown>): Promise<void> => {
    await assert.rejects(p, (err: unknown) => {
      const code = statusCodeOf(err);
      assert.ok(code === 403 || code === 422, `${what}: HTTP ${String(code)} ${String(err)}`);
      assert.match(String(err), policy, what);
      return true;
    });
  };
  const webhookOf = async (path: string): Promise<Record<string, unknown>> => {
    const c = await read<{ webhooks?: Record<string, unknown>[] }>(admin, path);
    return c.webhooks?.[0] ?? {};
  };

  before(async () => {
    const cluster = plane().cluster('runtime');
    admin = cluster.kubeConfig();
    const manifests = renderWebhookManifests({
      image: 'example.com/rtb:test',
      // Nothing answers there: both registrations fail open (Ignore) and are only written here.
      url: 'https://127.0.0.1:1/mutate',
      driftListenerUrl: 'https://kcp.example:8443',
      pullSecretName: PULL,
    });
    await applyObjects(admin, [
      ...(webhookManifestList(manifests) as KubernetesObject[]),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: TENANT } },
    ]);
    sa = await asWebhookServiceAccount(cluster);
    // The policies are in force once the API server's informer has them: wait for a first refusal.
    await eventually(
      async () => {
        try {
          await post(sa, TENANT, secret(TENANT, 'probe', 'Opaque'));
        } catch (err) {
          if (SECRETS_POLICY_SAYS.test(String(err))) return true;
          throw err;
        }
        await kubeRequest(admin, { method: 'DELETE', path: `${secretsPath(TENANT)}/probe` });
        throw new Error('the Secret policy is not in force yet');
      },
      30_000,
      'the Secret policy to be in force',
    );
    await eventually(
      async () => {
        try {
          await mergePatch(sa, mutatingPath, { metadata: { labels: { probe: 'x' } } });
        } catch (err) {
          if (REGISTRATION_POLICY_SAYS.test(String(err))) return true;
          throw err;
        }
        await mergePatch(admin, mutatingPath, { metadata: { labels: { probe: null } } });
        throw new Error('the registration policy is not in force yet');
      },
      30_000,
      'the registration policy to be in force',
    );
  });

  test('no token can be minted: a service-account-token Secret under the pull name in kube-system is refused', async () => {
    await refused(
      'a token Secret under the pull name',
      SECRETS_POLICY_SAYS,
      post(sa, 'kube-system', {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: PULL,
          namespace: 'kube-system',
          annotations: { 'kubernetes.io/service-account.name': 'default' },
        },
        type: 'kubernetes.io/service-account-token',
      }),
    );
    await refused(
      'an Opaque Secret under the pull name',
      SECRETS_POLICY_SAYS,
      post(sa, TENANT, secret(TENANT, PULL, 'Opaque')),
    );
    await assert.rejects(
      read(admin, `${secretsPath('kube-system')}/${PULL}`),
      (e) => statusCodeOf(e) === 404,
    );
  });

  test('a Secret of another name is refused, of a pull type too; the preflight candidate anywhere', async () => {
    await refused('another name', SECRETS_POLICY_SAYS, post(sa, TENANT, secret(TENANT, 'other', 'Opaque')));
    await refused(
      'another name, pull type',
      SECRETS_POLICY_SAYS,
      post(sa, TENANT, secret(TENANT, 'other', DOCKER)),
    );
    await refused(
      'the default name',
      SECRETS_POLICY_SAYS,
      post(sa, TENANT, secret(TENANT, 'registry-credentials', DOCKER)),
    );
    // The KCP writes the candidate; the webhook only reads it.
    for (const ns of [TENANT, RUNTIME_NAMESPACE])
      await refused(
        `the preflight candidate in ${ns}`,
        SECRETS_POLICY_SAYS,
        post(sa, ns, secret(ns, PREFLIGHT_SECRET, DOCKER)),
      );
    await refused(
      'the serving Secret outside its namespace',
      SECRETS_POLICY_SAYS,
      post(sa, TENANT, secret(TENANT, WEBHOOK_TLS_SECRET, 'Opaque')),
    );
  });

  test("the copier's writes pass: the pull Secret's copy created, replaced, deleted in a tenant namespace", async () => {
    const core = coreCalls(sa);
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: PULL,
        namespace: TENANT,
        labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
        annotations: { [COPIED_FROM_ANNOTATION]: `${RUNTIME_NAMESPACE}/${PULL}` },
      },
      type: DOCKER,
      data: dockerData,
    };
    await core.createNamespacedSecret({ namespace: TENANT, body, fieldManager: 'rt-bootstrapper' });
    await core.replaceNamespacedSecret({
      name: PULL,
      namespace: TENANT,
      body: { ...body, data: { '.dockerconfigjson': Buffer.from('{"auths":{"x":{}}}').toString('base64') } },
      fieldManager: 'rt-bootstrapper',
    });
    await core.deleteNamespacedSecret({ name: PULL, namespace: TENANT });
    await core.createNamespacedSecret({ namespace: TENANT, body, fieldManager: 'rt-bootstrapper' });
  });

  test("a tenant's own Secret under the pull name is neither replaced nor deleted", async () => {
    const own = 'tenant-own';
    await kubeRequest(admin, {
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: own } },
    });
    await post(admin, own, secret(own, PULL, DOCKER));
    const core = coreCalls(sa);
    await refused(
      'replacing it',
      SECRETS_POLICY_SAYS,
      core.replaceNamespacedSecret({
        name: PULL,
        namespace: own,
        body: {
          metadata: { name: PULL, namespace: own, labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
          type: DOCKER,
          data: dockerData,
        },
      }),
    );
    await refused(
      'deleting it',
      SECRETS_POLICY_SAYS,
      core.deleteNamespacedSecret({ name: PULL, namespace: own }),
    );
  });

  test('its serving Secret passes in its own namespace (the webhook writes it with its own issuer)', async () => {
    const ref = { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_TLS_SECRET };
    const created = await putServingSecret(sa, ref, undefined, { tlsCrt: 'a', tlsKey: 'b', caCrt: 'c' });
    await putServingSecret(sa, ref, created, { tlsCrt: 'd', tlsKey: 'e', caCrt: 'f' });
  });

  test("on our webhook configurations the caBundle may change (the keeper's apply), nothing else", async () => {
    for (const [kind, path] of [
      [MUTATING, mutatingPath],
      [VALIDATING, validatingPath],
    ] as const) {
      const before = await read<WebhookConfiguration>(admin, path);
      const written = await applyCaBundle(sa, kind, before, 'a CA');
      assert.equal(
        Buffer.from(written.webhooks?.[0]?.clientConfig.caBundle ?? '', 'base64').toString(),
        'a CA',
      );
      assert.equal(
        written.metadata?.managedFields?.some((f) => f.manager === CA_BUNDLE_FIELD_MANAGER),
        true,
      );
      const name = String((await webhookOf(path)).name);
      const change = (webhook: Record<string, unknown>): Promise<unknown> =>
        kubeRequest(sa, {
          method: 'PATCH',
          path,
          // A strategic merge patch keyed by the webhook's name changes just that field.
          body: { webhooks: [{ name, ...webhook }] },
          contentType: 'application/strategic-merge-patch+json',
          timeoutMs: 10_000,
        });
      const say = REGISTRATION_POLICY_SAYS;
      await refused(
        `${kind.kind}: a new URL`,
        say,
        change({ clientConfig: { url: 'https://evil.example/m' } }),
      );
      await refused(`${kind.kind}: fail closed`, say, change({ failurePolicy: 'Fail' }));
      await refused(
        `${kind.kind}: other rules`,
        say,
        change({
          rules: [
            { operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] },
          ],
        }),
      );
      await refused(`${kind.kind}: another timeout`, say, change({ timeoutSeconds: 30 }));
      await refused(
        `${kind.kind}: another namespace selector`,
        say,
        change({ namespaceSelector: { matchLabels: { only: 'me' } } }),
      );
      await refused(
        `${kind.kind}: a match condition`,
        say,
        change({ matchConditions: [{ name: 'never', expression: 'false' }] }),
      );
      await refused(
        `${kind.kind}: the caBundle with the URL`,
        say,
        change({
          clientConfig: { url: 'https://evil.example/m', caBundle: Buffer.from('x').toString('base64') },
        }),
      );
      await refused(`${kind.kind}: a label`, say, mergePatch(sa, path, { metadata: { labels: { x: 'y' } } }));
      await refused(
        `${kind.kind}: a second webhook`,
        say,
        kubeRequest(sa, {
          method: 'PATCH',
          path,
          body: [
            {
              op: 'add',
              path: '/webhooks/-',
              value: { ...(await webhookOf(path)), name: 'second.example.com' },
            },
          ],
          contentType: 'application/json-patch+json',
        }),
      );
      await refused(
        `${kind.kind}: the webhook's name`,
        say,
        kubeRequest(sa, {
          method: 'PATCH',
          path,
          body: [{ op: 'replace', path: '/webhooks/0/name', value: 'other.example.com' }],
          contentType: 'application/json-patch+json',
        }),
      );
      const after = await webhookOf(path);
      assert.equal(
        (after.clientConfig as { url?: string }).url,
        (before.webhooks?.[0]?.clientConfig as { url?: string }).url,
      );
      assert.equal(after.failurePolicy, before.webhooks?.[0]?.failurePolicy);
    }
    // An administrator is not matched.
    await mergePatch(admin, mutatingPath, { metadata: { labels: { admin: 'may' } } });
  });

  test('the upstream annotation may be removed by our cleanup, never set', async () => {
    const annotation = UPSTREAM_ANNOTATIONS[0]?.annotation ?? '';
    await refused(
      'setting it',
      REGISTRATION_POLICY_SAYS,
      mergePatch(sa, mutatingPath, { metadata: { annotations: { [annotation]: 'kyma-system/x' } } }),
    );
    await mergePatch(admin, mutatingPath, { metadata: { annotations: { [annotation]: 'kyma-system/x' } } });
    await refused(
      'changing it',
      REGISTRATION_POLICY_SAYS,
      mergePatch(sa, mutatingPath, { metadata: { annotations: { [annotation]: 'kyma-system/y' } } }),
    );
    const results = await removeUpstreamLeftovers(sa, silentLogger(), { leftovers: [] });
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['removed'],
    );
    const stored = await read<V1MutatingWebhookConfiguration>(admin, mutatingPath);
    assert.equal(stored.metadata?.annotations?.[annotation], undefined);
  });

  test('creating or deleting a webhook configuration is refused', async () => {
    const body = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: MUTATING_WEBHOOK_CONFIGURATION },
    };
    await assert.rejects(
      kubeRequest(sa, { method: 'DELETE', path: mutatingPath }),
      (e) => statusCodeOf(e) === 403,
    );
    await assert.rejects(
      kubeRequest(sa, { method: 'POST', path: MUTATING.path, body }),
      (e) => statusCodeOf(e) === 403,
    );
  });

  test("the sweeper of renamed copies under the rendered RBAC alone: our copy goes, a tenant's Secret of that name and a copy a live Pod names stay", async () => {
    const core = coreCalls(admin);
    const copyOf = (): Record<string, unknown> => ({
      metadata: {
        name: 'earlier-pull',
        labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE },
        annotations: { [COPIED_FROM_ANNOTATION]: `${RUNTIME_NAMESPACE}/earlier-pull` },
      },
      type: DOCKER,
      data: dockerData,
    });
    await applyObjects(admin, [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'sweep-theirs' } },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'sweep-in-use' } },
    ] as KubernetesObject[]);
    // A copy under an earlier name (ours by label and annotation) in the tenant's namespace...
    await post(admin, TENANT, copyOf());
    // ...another tenant's own Secret of that name, and one labelled ours without the annotation (the KCP's kind)...
    await post(
      admin,
      'sweep-theirs',
      secret('sweep-theirs', 'earlier-pull', DOCKER, { labels: { app: 'theirs' } }),
    );
    await core.createNamespacedSecret({
      namespace: RUNTIME_NAMESPACE,
      body: {
        metadata: { name: 'earlier-pull', labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
        type: DOCKER,
        data: dockerData,
      },
    });
    // ...and our copy that a live Pod still names (no node: it stays Pending, which is live).
    await post(admin, 'sweep-in-use', copyOf());
    await kubeRequest(admin, {
      method: 'POST',
      path: '/api/v1/namespaces/sweep-in-use/pods',
      body: podNamingPullSecret('uses-earlier', 'earlier-pull'),
    });
    // The rendered RBAC: no right to list Secrets, with or without a selector.
    await assert.rejects(read(sa, '/api/v1/secrets'), (e) => statusCodeOf(e) === 403);
    let name = 'earlier-pull';
    const sweeper = new RenamedCopySweeper({
      calls: renamedCopyCalls(sa),
      currentName: () => name,
      metrics: createWebhookMetrics(new Registry()),
      logger: silentLogger(),
    });
    // The copier wrote under the earlier name; then the configuration renamed it.
    assert.deepEqual(await sweeper.sweep(), { removed: 0, kept: 0, failed: 0 });
    name = PULL;
    assert.deepEqual(await sweeper.sweep(), { removed: 1, kept: 1, failed: 0 });
    await assert.rejects(read(admin, `${secretsPath(TENANT)}/earlier-pull`), (e) => statusCodeOf(e) === 404);
    const theirs = await read<{ metadata?: { labels?: Record<string, string> } }>(
      admin,
      `${secretsPath('sweep-theirs')}/earlier-pull`,
    );
    assert.equal(theirs.metadata?.labels?.app, 'theirs', "a tenant's Secret of that name stays");
    await read(admin, `${secretsPath(RUNTIME_NAMESPACE)}/earlier-pull`);
    await read(admin, `${secretsPath('sweep-in-use')}/earlier-pull`);
    assert.deepEqual(sweeper.remembered(), [PULL, 'earlier-pull'], 'kept for the live Pod: still remembered');
    // The Pod gone, the next sweep removes that copy and forgets the name.
    await kubeRequest(admin, {
      method: 'DELETE',
      path: '/api/v1/namespaces/sweep-in-use/pods/uses-earlier',
      query: { gracePeriodSeconds: 0 },
    });
    await eventuallyFailsWith(
      () => read(admin, '/api/v1/namespaces/sweep-in-use/pods/uses-earlier'),
      404,
      15_000,
      'the Pod gone',
    );
    assert.deepEqual(await sweeper.sweep(), { removed: 1, kept: 0, failed: 0 });
    await assert.rejects(
      read(admin, `${secretsPath('sweep-in-use')}/earlier-pull`),
      (e) => statusCodeOf(e) === 404,
    );
    assert.deepEqual(sweeper.remembered(), [PULL]);
    // The policy refuses deleting a Secret that is not our copy.
    await refused(
      'deleting a Secret that is not our copy',
      SECRETS_POLICY_SAYS,
      kubeRequest(sa, { method: 'DELETE', path: `${secretsPath(RUNTIME_NAMESPACE)}/earlier-pull` }),
    );
    await refused(
      'deleting the preflight candidate',
      SECRETS_POLICY_SAYS,
      (async () => {
        await post(admin, RUNTIME_NAMESPACE, secret(RUNTIME_NAMESPACE, PREFLIGHT_SECRET, DOCKER));
        await kubeRequest(sa, {
          method: 'DELETE',
          path: `${secretsPath(RUNTIME_NAMESPACE)}/${PREFLIGHT_SECRET}`,
        });
      })(),
    );
  });
  test("the admission policy: the agent installs ours as the ServiceAccount; another name, a plain create, another's policy, binding and parameters are refused", async () => {
    const policyBody = (name: string): Record<string, unknown> => ({
      apiVersion: `admissionregistration.k8s.io/${policyVersion}`,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name },
      spec: {
        paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] },
          ],
        },
        failurePolicy: 'Ignore',
        reinvocationPolicy: 'Never',
        mutations: [
          {
            patchType: 'ApplyConfiguration',
            applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"x": "y"}}}' },
          },
        ],
      },
    });
    const bindingBody = (
      name: string,
      policyName: string,
      paramName = ADMISSION_POLICY_NAME,
    ): Record<string, unknown> => ({
      apiVersion: `admissionregistration.k8s.io/${policyVersion}`,
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name },
      spec: {
        policyName,
        paramRef: { name: paramName, namespace: RUNTIME_NAMESPACE, parameterNotFoundAction: 'Allow' },
      },
    });
    const forbidden = (what: string, p: Promise<unknown>): Promise<void> =>
      assert.rejects(p, (e) => statusCodeOf(e) === 403, what);
    const create = (path: string, body: unknown): Promise<unknown> =>
      kubeRequest(sa, { method: 'POST', path, body, timeoutMs: 10_000 });
    // A server-side apply as the ServiceAccount: a create authorized with the object's name.
    const applyAs = (path: string, body: unknown): Promise<unknown> =>
      kubeRequest(sa, {
        method: 'PATCH',
        path,
        body,
        query: { fieldManager: 'attacker', force: true },
        contentType: 'application/apply-patch+yaml',
        timeoutMs: 10_000,
      });

    // Ours: the agent's installer, as the ServiceAccount, under the rendered RBAC alone.
    const installer = new AdmissionPolicyInstaller({
      access: sa,
      logger: silentLogger(),
      installsHere: true,
      statusConfigMap: undefined,
      loaded: () => ({
        config: parseWebhookConfig({
          overrides: { 'replace.me': 'ghcr.io' },
          availableFeatures: [FEATURE_ALL],
          namespaceFeatures: { 'policy-only': [FEATURE_ALL] },
          imagePullSecret: { name: PULL, namespace: RUNTIME_NAMESPACE },
        }),
        revision: undefined,
        trustBundle: undefined,
        trustBundleMount: false,
        namespace: RUNTIME_NAMESPACE,
      }),
    });
    const term = installer.leaderPart({ isLeader: () => true });
    await term.start();
    try {
      await eventually(
        () => (installer.report()?.path === 'policy' ? true : undefined),
        30_000,
        'the agent to install the policy',
      );
    } finally {
      await term.stop();
    }
    await read(admin, `${policiesPath}/${ADMISSION_POLICY_NAME}`);
    const binding = await read<{ spec: { policyName: string } }>(
      admin,
      `${bindingsPath}/${ADMISSION_POLICY_NAME}`,
    );
    assert.equal(binding.spec.policyName, ADMISSION_POLICY_NAME);
    await read(admin, `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/${ADMISSION_POLICY_NAME}`);

    // Another name, by apply or by a plain create (whose name RBAC never sees: refused, ours too).
    await forbidden(
      'a policy of another name',
      applyAs(`${policiesPath}/someone-elses`, policyBody('someone-elses')),
    );
    await forbidden('a policy created by POST', create(policiesPath, policyBody('someone-elses')));
    await forbidden('our policy created by POST', create(policiesPath, policyBody(ADMISSION_POLICY_NAME)));
    await forbidden(
      'a binding of another name (naming another policy)',
      applyAs(`${bindingsPath}/someone-elses`, bindingBody('someone-elses', 'someone-elses')),
    );
    await forbidden(
      'a binding created by POST',
      create(bindingsPath, bindingBody('someone-elses', ADMISSION_POLICY_NAME)),
    );
    await forbidden(
      'a ConfigMap of another name',
      applyAs(`/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/someone-elses`, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'someone-elses', namespace: RUNTIME_NAMESPACE },
      }),
    );
    // Another's policy, binding and parameters: RBAC names ours alone.
    await applyObjects(admin, [
      policyBody('someone-elses'),
      bindingBody('someone-elses', 'someone-elses', 'someone-elses'),
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'someone-elses', namespace: RUNTIME_NAMESPACE },
      },
    ]);
    // The API server's parameter check is passed without reading any ConfigMap.
    for (const path of [
      `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/someone-elses`,
      '/api/v1/namespaces/default/configmaps/kube-root-ca.crt',
    ])
      await forbidden(`reading ${path}`, read(sa, path));
    for (const path of [
      `${policiesPath}/someone-elses`,
      `${bindingsPath}/someone-elses`,
      `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/someone-elses`,
    ]) {
      await forbidden(`changing ${path}`, mergePatch(sa, path, { metadata: { labels: { taken: 'yes' } } }));
      await forbidden(`deleting ${path}`, kubeRequest(sa, { method: 'DELETE', path }));
    }
    // Direct mode's Role lets the ServiceAccount create a ConfigMap by any name (the status
    // report, by POST); the policy keeps it to the report and the parameters, in its namespace.
    await applyObjects(
      admin,
      [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'Role',
          metadata: { name: 'direct-mode-configmap-create', namespace: RUNTIME_NAMESPACE },
          rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['create'] }],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'direct-mode-configmap-create', namespace: RUNTIME_NAMESPACE },
          roleRef: {
            apiGroup: 'rbac.authorization.k8s.io',
            kind: 'Role',
            name: 'direct-mode-configmap-create',
          },
          subjects: [{ kind: 'ServiceAccount', name: WEBHOOK_SERVICE_ACCOUNT, namespace: RUNTIME_NAMESPACE }],
        },
      ].map((o): KubernetesObject => o),
    );
    const configMap = (name: string): Record<string, unknown> => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: RUNTIME_NAMESPACE },
    });
    const configMaps = `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps`;
    await eventually(
      async () => {
        try {
          await create(configMaps, configMap('probe-of-another-name'));
        } catch (err) {
          if (new RegExp(WEBHOOK_ADMISSION_POLICY_POLICY).test(String(err))) return true;
          throw err;
        }
        await kubeRequest(admin, { method: 'DELETE', path: `${configMaps}/probe-of-another-name` });
        return undefined;
      },
      30_000,
      'a ConfigMap of another name refused by the policy',
    );
    await create(configMaps, configMap(WEBHOOK_STATUS_CONFIG_MAP));
    // Ours may change: the agent's own write passes again.
    await mergePatch(sa, `${policiesPath}/${ADMISSION_POLICY_NAME}`, {
      metadata: { labels: { ours: 'yes' } },
    });
  });
});
