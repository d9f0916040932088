import type { V1PolicyRule, V1Service } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  MUTATE_PATH_UPSTREAM,
  MUTATING_WEBHOOK_CONFIGURATION,
  NETWORK_POLICY_API_SERVER_EGRESS,
  NETWORK_POLICY_METRICS_INGRESS,
  NETWORK_POLICY_WEBHOOK_INGRESS,
  MUTATING_WEBHOOK_NAME,
  VALIDATING_WEBHOOK_CONFIGURATION,
  VALIDATING_WEBHOOK_NAME,
  VERSION_LABEL,
  WATCHER_TLS_SECRET,
  WEBHOOK_CERT_LEASE,
  WEBHOOK_CLUSTER_ROLE,
  WEBHOOK_CLUSTER_ROLE_BINDING,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_PDB,
  WEBHOOK_ROLE,
  WEBHOOK_ROLE_BINDING,
  WEBHOOK_SERVICE,
  WEBHOOK_SERVICE_ACCOUNT,
  WEBHOOK_TLS_SECRET,
} from '../../../src/api/runtime-names.js';
import { renderWebhookManifests, webhookManifestList } from '../../../src/render/webhook-manifests.js';
import {
  AdmissionNamespaceError,
  NOT_OWN_PODS_CONDITION,
  renderMutatingWebhookConfiguration,
} from '../../../src/render/webhook-registration.js';
import { UPSTREAM_LEFTOVERS } from '../../../src/api/upstream-leftovers.js';
import { RESTARTER_LEASE } from '../../../src/api/trust-stamp.js';
import { trustRestartRules } from '../../../src/render/webhook-rbac.js';
import { upstreamInstall } from '../../support/upstream-install.js';
import { WEBHOOK_WRITE_POLICY } from '../../../src/render/webhook-write-policy.js';
import { WEBHOOK_SECRET_POLICY } from '../../../src/render/webhook-secret-policy.js';
import { WEBHOOK_REGISTRATION_POLICY } from '../../../src/render/webhook-registration-policy.js';
import { WEBHOOK_ADMISSION_POLICY_POLICY } from '../../../src/render/webhook-admission-policy-rights.js';
import { ADMISSION_POLICY_NAME } from '../../../src/render/admission-policy.js';
import { WEBHOOK_NODE_OPTIONS, WEBHOOK_OLD_SPACE_MB } from '../../../src/render/webhook-deployment.js';
import {
  DRAIN_TIMEOUT_SECONDS,
  DRIFT_FLUSH_SECONDS,
  READ_BUDGET_BYTES,
  SHUTDOWN_DELAY_SECONDS,
  TERMINATION_GRACE_SECONDS,
} from '../../../src/api/serving-limits.js';

const m = renderWebhookManifests({ image: 'example.com/rtb:1.2.3', caBundlePem: 'PEM', version: '1.2.3' });
const hook = m.mutatingWebhookConfiguration.webhooks![0]!;
const container = m.deployment.spec!.template.spec!.containers[0]!;

describe('rendered webhook manifests', () => {
  test("every object has upstream's name", () => {
    const names = webhookManifestList(m).map((o) => {
      const x = o as { kind: string; metadata: { name: string; namespace?: string } };
      return `${x.kind} ${x.metadata.namespace ?? ''}/${x.metadata.name}`;
    });
    assert.deepEqual(names, [
      'Namespace /kyma-system',
      `ServiceAccount kyma-system/${WEBHOOK_SERVICE_ACCOUNT}`,
      `ClusterRole /${WEBHOOK_CLUSTER_ROLE}`,
      `ClusterRoleBinding /${WEBHOOK_CLUSTER_ROLE_BINDING}`,
      `Role kyma-system/${WEBHOOK_ROLE}`,
      `RoleBinding kyma-system/${WEBHOOK_ROLE_BINDING}`,
      `ValidatingAdmissionPolicy /${WEBHOOK_WRITE_POLICY}`,
      `ValidatingAdmissionPolicyBinding /${WEBHOOK_WRITE_POLICY}`,
      `ValidatingAdmissionPolicy /${WEBHOOK_SECRET_POLICY}`,
      `ValidatingAdmissionPolicyBinding /${WEBHOOK_SECRET_POLICY}`,
      `ValidatingAdmissionPolicy /${WEBHOOK_REGISTRATION_POLICY}`,
      `ValidatingAdmissionPolicyBinding /${WEBHOOK_REGISTRATION_POLICY}`,
      `ValidatingAdmissionPolicy /${WEBHOOK_ADMISSION_POLICY_POLICY}`,
      `ValidatingAdmissionPolicyBinding /${WEBHOOK_ADMISSION_POLICY_POLICY}`,
      `Service kyma-system/${WEBHOOK_SERVICE}`,
      `NetworkPolicy kyma-system/${NETWORK_POLICY_WEBHOOK_INGRESS}`,
      `NetworkPolicy kyma-system/${NETWORK_POLICY_METRICS_INGRESS}`,
      `NetworkPolicy kyma-system/${NETWORK_POLICY_API_SERVER_EGRESS}`,
      `Deployment kyma-system/${WEBHOOK_DEPLOYMENT}`,
      `PodDisruptionBudget kyma-system/${WEBHOOK_PDB}`,
      `MutatingWebhookConfiguration /${MUTATING_WEBHOOK_CONFIGURATION}`,
    ]);
    assert.equal(WEBHOOK_DEPLOYMENT, 'rt-bootstrapper-controller-manager');
    assert.equal(WEBHOOK_SERVICE, 'rt-bootstrapper-webhook-service');
    assert.equal(MUTATING_WEBHOOK_CONFIGURATION, 'rt-bootstrapper-mutating-webhook-configuration');
    assert.deepEqual(m.clusterRoleBinding.roleRef.name, WEBHOOK_CLUSTER_ROLE);
    assert.deepEqual(m.roleBinding.roleRef.name, WEBHOOK_ROLE);
    for (const b of [m.clusterRoleBinding, m.roleBinding])
      assert.deepEqual(b.subjects, [
        { kind: 'ServiceAccount', name: WEBHOOK_SERVICE_ACCOUNT, namespace: 'kyma-system' },
      ]);
  });

  test("the registration: upstream's webhook name and path, the contract settings", () => {
    assert.equal(hook.name, MUTATING_WEBHOOK_NAME);
    assert.equal(hook.name, 'mpod-v1.kb.io');
    assert.equal(hook.sideEffects, 'NoneOnDryRun');
    assert.equal(hook.reinvocationPolicy, 'IfNeeded');
    assert.equal(hook.timeoutSeconds, 5);
    assert.equal(hook.failurePolicy, 'Ignore');
    assert.deepEqual(hook.admissionReviewVersions, ['v1']);
    assert.deepEqual(
      hook.rules!.map((r) => [r.operations, r.resources]),
      [
        [['CREATE', 'UPDATE'], ['pods']],
        [['UPDATE'], ['pods/ephemeralcontainers']],
      ],
    );
    assert.equal(hook.clientConfig.caBundle, Buffer.from('PEM').toString('base64'));
    assert.deepEqual(hook.clientConfig.service, {
      name: WEBHOOK_SERVICE,
      namespace: 'kyma-system',
      path: '/mutate--v1-pod',
      port: 443,
    });
    assert.equal(MUTATE_PATH_UPSTREAM, '/mutate--v1-pod');
  });

  test('no caBundle unless a CA is given (the webhook writes its own)', () => {
    const bare = renderWebhookManifests({ image: 'x', driftListenerUrl: 'https://kcp:8443' });
    assert.equal('caBundle' in bare.mutatingWebhookConfiguration.webhooks![0]!.clientConfig, false);
    assert.equal('caBundle' in bare.validatingWebhookConfiguration!.webhooks![0]!.clientConfig, false);
  });

  test('kube-system and the webhook itself are kept out', () => {
    assert.deepEqual(hook.namespaceSelector?.matchExpressions, [
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] },
    ]);
    const own = m.deployment.spec!.template.metadata!.labels!;
    assert.equal(own['app.kubernetes.io/name'], 'rt-bootstrapper');
    assert.deepEqual(hook.matchConditions, [
      {
        name: NOT_OWN_PODS_CONDITION,
        expression:
          '!(request.namespace == "kyma-system" && has(object.metadata.labels) && ' +
          '"app.kubernetes.io/name" in object.metadata.labels && ' +
          'object.metadata.labels["app.kubernetes.io/name"] == "rt-bootstrapper")',
      },
    ]);
  });

  test("a tenant's Pod labelled as ours is admitted: no objectSelector on the label, the exemption names the webhook's namespace", () => {
    // Upstream's selector let out every Pod labelled `app.kubernetes.io/name: rt-bootstrapper`,
    // in any namespace; the empty selector (every Pod) is written out so that an apply over
    // upstream's registration replaces it.
    assert.deepEqual(hook.objectSelector, {});
    const other = renderWebhookManifests({ image: 'x', namespace: 'rtb-ns' });
    const expression = other.mutatingWebhookConfiguration.webhooks![0]!.matchConditions![0]!.expression;
    assert.match(expression, /^!\(request\.namespace == "rtb-ns" && /);
    assert.equal(expression.includes('kyma-system'), false);
  });

  test('a namespace that is no namespace name never reaches the condition', () => {
    for (const namespace of ['', 'Kyma', 'a" || true || "', 'a'.repeat(64), 'ns\n'])
      assert.throws(
        () => renderMutatingWebhookConfiguration({ image: 'x' }, namespace),
        AdmissionNamespaceError,
        JSON.stringify(namespace),
      );
  });

  test("the Deployment can be applied over upstream's: selector, container, port, command", () => {
    const d = m.deployment;
    // Immutable, so it must be upstream's exactly.
    assert.deepEqual(d.spec!.selector, {
      matchLabels: { 'control-plane': 'controller-manager', 'app.kubernetes.io/name': 'rt-bootstrapper' },
    });
    for (const [k, v] of Object.entries(d.spec!.selector.matchLabels))
      assert.equal(d.spec!.template.metadata!.labels![k], v, `Pod label ${k}`);
    assert.equal(d.spec!.template.metadata!.labels!['sidecar.istio.io/inject'], 'false');
    assert.equal(d.metadata!.labels![VERSION_LABEL], '1.2.3');
    assert.equal(
      d.spec!.template.metadata!.labels![VERSION_LABEL],
      undefined,
      'a release alone rolls nothing',
    );
    assert.equal(d.spec!.template.spec!.serviceAccountName, WEBHOOK_SERVICE_ACCOUNT);
    assert.equal(container.name, 'manager');
    assert.deepEqual(container.command, ['rtb']);
    assert.deepEqual(container.ports, [
      { name: 'webhook-server', containerPort: 9443, protocol: 'TCP' },
      { name: 'metrics', containerPort: 8080, protocol: 'TCP' },
    ]);
    for (const p of [container.readinessProbe, container.livenessProbe])
      assert.deepEqual(p?.httpGet?.port, 'webhook-server');
    assert.equal(container.readinessProbe?.httpGet?.path, '/readyz');
    assert.equal(container.image, 'example.com/rtb:1.2.3');
  });

  test('args and env: no certificate files, the downward API for the Lease', () => {
    assert.deepEqual(container.args, [
      'webhook',
      '--port=9443',
      '--metrics-port=8080',
      '--config-map=kyma-system/rt-bootstrapper-config',
      '--config-key=rt-bootstrapper-config.json',
      '--log-level=info',
      '--shutdown-delay=5s',
      '--fips',
    ]);
    assert.deepEqual(container.env, [
      { name: 'NODE_OPTIONS', value: '--max-semi-space-size=4 --max-old-space-size=96' },
      { name: 'MALLOC_MMAP_THRESHOLD_', value: '131072' },
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ]);
    assert.equal(
      m.deployment.spec!.template.spec!.volumes,
      undefined,
      'the serving certificate is not mounted',
    );
    assert.equal(container.volumeMounts, undefined);
    const landscape = renderWebhookManifests({ image: 'x', landscape: 'eu10' }).deployment;
    assert.equal(landscape.spec!.template.spec!.containers[0]!.args!.at(-1), '--landscape=eu10');
  });

  test('the grace period holds the shutdown delay, the drain and the drift flush; the heap cap fits the memory limit', () => {
    const spec = m.deployment.spec!.template.spec!;
    const delay = Number(
      /^--shutdown-delay=(\d+)s$/.exec(
        container.args!.find((a) => a.startsWith('--shutdown-delay=')) ?? '',
      )?.[1],
    );
    assert.equal(delay, SHUTDOWN_DELAY_SECONDS);
    assert.equal(spec.terminationGracePeriodSeconds, TERMINATION_GRACE_SECONDS);
    assert.ok(TERMINATION_GRACE_SECONDS > delay + DRAIN_TIMEOUT_SECONDS + DRIFT_FLUSH_SECONDS);
    const mib = (q: string | undefined): number => Number(/^(\d+)Mi$/.exec(q ?? '')?.[1]);
    const oldSpace = Number(/--max-old-space-size=(\d+)/.exec(WEBHOOK_NODE_OPTIONS)?.[1]);
    const semiSpace = Number(/--max-semi-space-size=(\d+)/.exec(WEBHOOK_NODE_OPTIONS)?.[1]);
    assert.equal(oldSpace, WEBHOOK_OLD_SPACE_MB);
    const limit = mib(container.resources?.limits?.memory);
    const request = mib(container.resources?.requests?.memory);
    // Heap (old + two semi-spaces), bodies being read, ~50 MB of native memory: inside the limit.
    const readMb = READ_BUDGET_BYTES / 1e6;
    assert.ok(
      (oldSpace + 2 * semiSpace + readMb + 50) * 1e6 < limit * 1024 * 1024,
      'the bounded process fits the limit',
    );
    assert.ok(
      request < limit && request * 1024 * 1024 > 77e6,
      'the request holds the measured ordinary load',
    );
  });

  test('the drift channel adds its flags, client certificate volume and registration', () => {
    const d = renderWebhookManifests({ image: 'x', driftListenerUrl: 'https://kcp.example:8443' });
    const c = d.deployment.spec!.template.spec!.containers[0]!;
    assert.ok(c.args!.includes('--drift-url=https://kcp.example:8443'), 'the drift flag');
    assert.deepEqual(d.deployment.spec!.template.spec!.volumes, [
      { name: 'watcher', secret: { secretName: WATCHER_TLS_SECRET } },
    ]);
    assert.deepEqual(c.volumeMounts, [
      { name: 'watcher', mountPath: '/etc/rt-bootstrapper/watcher', readOnly: true },
    ]);
    const vwc = d.validatingWebhookConfiguration!;
    assert.equal(vwc.metadata!.name, VALIDATING_WEBHOOK_CONFIGURATION);
    assert.equal(vwc.webhooks![0]!.name, VALIDATING_WEBHOOK_NAME);
    assert.equal(vwc.webhooks![0]!.clientConfig.service?.name, WEBHOOK_SERVICE);
    assert.equal(vwc.webhooks![0]!.clientConfig.service.path, '/validate');
  });

  test('two replicas, a PodDisruptionBudget, a Service 443 → 9443 on the same selector', () => {
    assert.equal(m.deployment.spec!.replicas, 2);
    assert.equal(m.podDisruptionBudget.spec!.minAvailable, 1);
    assert.deepEqual(m.podDisruptionBudget.spec!.selector, m.deployment.spec!.selector);
    assert.deepEqual(m.service.spec!.selector, m.deployment.spec!.selector.matchLabels);
    assert.deepEqual(m.service.spec!.ports, [{ port: 443, targetPort: 9443, protocol: 'TCP' }]);
  });

  test('a rollout stops an old Pod only once the new one has been Ready for the endpoint propagation', () => {
    const spec = m.deployment.spec!;
    assert.deepEqual(spec.strategy?.rollingUpdate, { maxUnavailable: 0, maxSurge: 1 });
    assert.ok((spec.minReadySeconds ?? 0) >= SHUTDOWN_DELAY_SECONDS, String(spec.minReadySeconds));
  });

  test("the Service's ports are upstream's: a takeover renames no port the API server resolves by", () => {
    const upstream: V1Service | undefined = upstreamInstall().find(
      (o) => o.kind === 'Service' && o.metadata?.name === WEBHOOK_SERVICE,
    );
    assert.ok(upstream, "upstream's webhook Service");
    assert.deepEqual(m.service.spec!.ports, upstream.spec!.ports);
  });

  test('RBAC: by name wherever the verb allows it', () => {
    const all: V1PolicyRule[] = [...m.clusterRole.rules!, ...m.role.rules!];
    // The restarter's rules cannot name their objects (any workload of the cluster); checked below.
    const restarter = new Set(trustRestartRules().map((r) => JSON.stringify(r)));
    for (const r of all) {
      if (restarter.has(JSON.stringify(r))) continue;
      assert.ok(!r.verbs.includes('*') && !r.resources!.includes('*'), JSON.stringify(r));
      // create cannot be limited by name; namespaces and events need no write by name; nodes are
      // only listed and watched (their kubelet versions).
      // The certificate writer lists the Pods of an install it takes over by label. Secrets are
      // deleted by any name (copies under earlier names), the Secret policy narrowing it.
      const podsByLabel = m.role.rules!.includes(r) && r.resources!.join() === 'pods';
      const secretDelete = r.resources!.join() === 'secrets' && r.verbs.join() === 'create,delete';
      const unnamed =
        r.verbs.every((v) => v === 'create') ||
        secretDelete ||
        r.resources!.some((x) => ['namespaces', 'events', 'nodes', 'registrycacheconfigs'].includes(x)) ||
        podsByLabel;
      if (!unnamed) assert.ok(r.resourceNames && r.resourceNames.length > 0, `named: ${JSON.stringify(r)}`);
    }
    const namespaces = m.clusterRole.rules!.find((r) => r.resources!.includes('namespaces'))!;
    assert.deepEqual(namespaces.verbs, ['get', 'list', 'watch']);
    const nodes = m.clusterRole.rules!.find((r) => r.resources!.includes('nodes'))!;
    assert.deepEqual(nodes.verbs, ['list', 'watch']);
    // Customers' registry caches: listed only (their hosts), never watched, read by name or written.
    const caches = m.clusterRole.rules!.find((r) => r.resources!.includes('registrycacheconfigs'))!;
    assert.deepEqual([caches.apiGroups, caches.verbs], [['core.kyma-project.io'], ['list']]);
    const events = m.clusterRole.rules!.find((r) => r.resources!.includes('events'))!;
    assert.deepEqual(events.verbs, ['create', 'patch']);
    const secretNames = all
      .filter((r) => r.resources!.includes('secrets') && r.resourceNames)
      .map((r) => r.resourceNames);
    assert.deepEqual(secretNames, [['registry-credentials'], [WEBHOOK_TLS_SECRET]]);
  });

  test('RBAC of the trust-bundle restarter: list and watch Pods, patch the rollable kinds, evict; never delete a Pod', () => {
    const cluster = m.clusterRole.rules!;
    for (const rule of trustRestartRules())
      assert.ok(cluster.some((r) => JSON.stringify(r) === JSON.stringify(rule)));
    const grants = (group: string, resource: string, verb: string): boolean =>
      cluster.some(
        (r) =>
          r.apiGroups!.includes(group) &&
          r.resources!.includes(resource) &&
          r.verbs.includes(verb) &&
          !r.resourceNames,
      );
    assert.ok(grants('', 'pods', 'list') && grants('', 'pods', 'watch'));
    assert.ok(grants('', 'pods', 'patch'), 'our label on upstream-stamped Pods');
    assert.ok(grants('', 'pods/eviction', 'create'));
    for (const kind of ['deployments', 'statefulsets', 'daemonsets'])
      assert.ok(grants('apps', kind, 'patch'), kind);
    assert.ok(grants('apps', 'replicasets', 'get'));
    assert.ok(grants('certificates.k8s.io', 'clustertrustbundles', 'watch'));
    const all = [...cluster, ...m.role.rules!];
    assert.ok(
      !all.some(
        (r) =>
          r.resources!.includes('pods') &&
          (r.verbs.includes('delete') || r.verbs.includes('deletecollection')),
      ),
      'no Pod delete',
    );
    assert.ok(
      !all.some(
        (r) => r.resources!.some((x) => ['jobs', 'replicasets'].includes(x)) && r.verbs.includes('patch'),
      ),
    );
    for (const issuer of ['own', 'external'] as const) {
      const rules = renderWebhookManifests({ image: 'x', servingCertIssuer: issuer }).role.rules!;
      assert.ok(
        rules.some(
          (r) =>
            r.resources!.includes('leases') &&
            r.resourceNames?.includes(RESTARTER_LEASE) &&
            r.verbs.includes('update'),
        ),
        `the restarter's Lease (${issuer})`,
      );
    }
  });

  test('RBAC: the serving Secret, the Lease and the caBundle, in the right scope', () => {
    assert.deepEqual(m.role.rules!.slice(0, 5), [
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['rt-bootstrapper-config'],
        verbs: ['get', 'list', 'watch'],
      },
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: [WEBHOOK_TLS_SECRET],
        verbs: ['get', 'list', 'watch', 'update', 'patch'],
      },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: [WEBHOOK_CERT_LEASE, RESTARTER_LEASE],
        verbs: ['get', 'list', 'watch', 'update', 'patch'],
      },
      // The writer keeps the CA of Pods of an install it takes over until they are gone.
      { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
    ]);
    for (const [resource, name] of [
      ['mutatingwebhookconfigurations', MUTATING_WEBHOOK_CONFIGURATION],
      ['validatingwebhookconfigurations', VALIDATING_WEBHOOK_CONFIGURATION],
    ] as const) {
      assert.deepEqual(
        m.clusterRole.rules!.find((r) => r.resources!.includes(resource)),
        {
          apiGroups: ['admissionregistration.k8s.io'],
          resources: [resource],
          resourceNames: [name],
          verbs: ['get', 'list', 'watch', 'patch'],
        },
      );
    }
  });

  test('the KCP writes the certificate (direct mode): the replicas only follow it, and may only read it', () => {
    const direct = renderWebhookManifests({ image: 'x', servingCertIssuer: 'external' });
    assert.deepEqual(direct.deployment.spec!.template.spec!.containers[0]!.args!.slice(-2), [
      '--serving-cert-issuer=external',
      '--status-config-map=kyma-system/rt-bootstrapper-webhook-status',
    ]);
    assert.deepEqual(direct.role.rules!.slice(0, 5), [
      m.role.rules![0],
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: [WEBHOOK_TLS_SECRET],
        verbs: ['get', 'list', 'watch'],
      },
      // The status report the KCP reads: created once, then patched by name.
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['rt-bootstrapper-webhook-status'],
        verbs: ['get', 'list', 'watch', 'patch'],
      },
      // The preflight's candidate set (DESIGN §11), read by name.
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['rt-bootstrapper-preflight'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    assert.ok(
      !direct.role.rules!.some((r) => r.resourceNames?.includes(WEBHOOK_CERT_LEASE)),
      'no certificate Lease: no election of a writer',
    );
    assert.deepEqual(direct.role.rules!.slice(5, 7), [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        resourceNames: [RESTARTER_LEASE],
        verbs: ['get', 'list', 'watch', 'update', 'patch'],
      },
    ]);
    assert.deepEqual(
      direct.role.rules!.slice(7),
      m.role.rules!.slice(5),
      'the rest as when the webhook writes itself, but the Pods of a takeover',
    );
    assert.ok(!container.args!.some((a) => a.startsWith('--serving-cert-issuer')), 'own: the default');
  });

  test('RBAC: exactly get and delete of each upstream leftover, by name', () => {
    const grants = (rules: readonly V1PolicyRule[], group: string, resource: string, name: string): boolean =>
      rules.some(
        (r) =>
          r.apiGroups!.includes(group) &&
          r.resources!.includes(resource) &&
          r.resourceNames?.includes(name) === true &&
          r.verbs.includes('delete') &&
          r.verbs.includes('get'),
      );
    for (const l of UPSTREAM_LEFTOVERS) {
      const group = l.apiVersion.includes('/') ? l.apiVersion.split('/')[0]! : '';
      const inNamespace = l.namespace === 'kyma-system';
      assert.ok(
        grants(inNamespace ? m.role.rules! : m.clusterRole.rules!, group, l.resource, l.name),
        `${l.kind} ${l.name} in the ${inNamespace ? 'Role' : 'ClusterRole'}`,
      );
    }
    // Secrets are deleted by any name (copies under earlier names), the Secret policy narrowing it.
    const deletable = [...m.clusterRole.rules!, ...m.role.rules!]
      .filter((r) => r.verbs.includes('delete') && !(r.resources!.includes('secrets') && !r.resourceNames))
      .flatMap((r) => r.resourceNames ?? ['*']);
    // And the admission policy and its binding the runtime agent installs, by name.
    assert.deepEqual(
      new Set(deletable),
      new Set([...UPSTREAM_LEFTOVERS.map((l) => l.name), ADMISSION_POLICY_NAME]),
    );
    const secretDeletes = [...m.clusterRole.rules!, ...m.role.rules!].filter(
      (r) => r.resources!.includes('secrets') && r.verbs.includes('delete') && !r.resourceNames,
    );
    assert.deepEqual(
      secretDeletes.map((r) => [r.verbs, r.resourceNames]),
      [[['create', 'delete'], undefined]],
    );
  });

  test('url mode: the URL as given, the drift registration beside it at /validate', () => {
    const local = renderWebhookManifests({
      image: 'x',
      url: 'https://127.0.0.1:9443/mutate--v1-pod',
      driftListenerUrl: 'https://unused',
    });
    const c = local.mutatingWebhookConfiguration.webhooks![0]!.clientConfig;
    assert.equal(c.url, 'https://127.0.0.1:9443/mutate--v1-pod');
    assert.equal(c.service, undefined);
    assert.equal(
      local.validatingWebhookConfiguration!.webhooks![0]!.clientConfig.url,
      'https://127.0.0.1:9443/validate',
    );
    const old = renderWebhookManifests({
      image: 'x',
      url: 'https://127.0.0.1:1/mutate',
      driftListenerUrl: 'h',
    });
    assert.equal(
      old.validatingWebhookConfiguration!.webhooks![0]!.clientConfig.url,
      'https://127.0.0.1:1/validate',
    );
    const list = webhookManifestList(local);
    assert.equal((list.at(-1) as { kind: string }).kind, 'ValidatingWebhookConfiguration');
    assert.equal((list.at(-2) as { kind: string }).kind, 'MutatingWebhookConfiguration');
    assert.equal((list[0] as { kind: string }).kind, 'Namespace');
  });

  test('labels: ours on every object, none on the namespace (it is Kyma’s)', () => {
    assert.equal(m.namespace.metadata!.labels, undefined);
    for (const o of webhookManifestList(m).slice(1)) {
      const labels = (o as { metadata: { labels: Record<string, string> } }).metadata.labels;
      assert.equal(labels['app.kubernetes.io/managed-by'], 'rt-bootstrapper');
      assert.equal(labels['app.kubernetes.io/name'], 'rt-bootstrapper');
      assert.equal(labels[VERSION_LABEL], '1.2.3');
    }
  });
});
