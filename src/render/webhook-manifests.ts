import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Deployment,
  V1MutatingWebhookConfiguration,
  V1Namespace,
  V1PodDisruptionBudget,
  V1Role,
  V1RoleBinding,
  V1Service,
  V1ServiceAccount,
  V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import {
  RESTART_RIGHTS_ROLE,
  WEBHOOK_CLUSTER_ROLE,
  WEBHOOK_CLUSTER_ROLE_BINDING,
  WEBHOOK_METRICS_PORT,
  WEBHOOK_METRICS_SERVICE,
  WEBHOOK_METRICS_PORT_NAME,
  WEBHOOK_PDB,
  WEBHOOK_PORT,
  WEBHOOK_ROLE,
  WEBHOOK_ROLE_BINDING,
  WEBHOOK_SELECTOR,
  WEBHOOK_SERVICE,
  WEBHOOK_SERVICE_ACCOUNT,
} from '../api/runtime-names.js';
import { CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE, DEFAULT_PULL_SECRET_NAME } from '../api/webhook-features.js';
import { renderWebhookDeployment } from './webhook-deployment.js';
import {
  networkPolicyList,
  renderWebhookNetworkPolicies,
  type WebhookNetworkPolicies,
} from './webhook-network-policies.js';
import {
  attestationClusterRules,
  attestationNamespaceRules,
  restartRightsRules,
  webhookClusterRules,
  webhookNamespaceRules,
} from './webhook-rbac.js';
import {
  renderDriftWebhookConfiguration,
  renderMutatingWebhookConfiguration,
} from './webhook-registration.js';
import { objectLabels, type WebhookManifestOptions } from './webhook-options.js';
import { renderMetricsScrape, type MetricsScrape } from './metrics-scrape.js';
import { renderWebhookWritePolicy, type WebhookWritePolicy } from './webhook-write-policy.js';
import { renderWebhookSecretPolicy } from './webhook-secret-policy.js';
import { renderWebhookRegistrationPolicy } from './webhook-registration-policy.js';
import { renderWebhookAdmissionPolicyRights } from './webhook-admission-policy-rights.js';

/** The trust-bundle restarter's rights in one namespace. */
export interface RestartRights {
  readonly role: V1Role;
  readonly binding: V1RoleBinding;
}

/** Everything `rtb render webhook` prints, in apply order. */
export interface WebhookManifests {
  readonly namespace: V1Namespace;
  readonly serviceAccount: V1ServiceAccount;
  readonly clusterRole: V1ClusterRole;
  readonly clusterRoleBinding: V1ClusterRoleBinding;
  readonly role: V1Role;
  readonly roleBinding: V1RoleBinding;
  /**
   * With {@link WebhookManifestOptions.restartNamespaces}: the restarter's rights in each of those
   * namespaces (a Role and its RoleBinding); empty otherwise (the rights are cluster-wide).
   */
  readonly restartRights: readonly RestartRights[];
  /**
   * What the ServiceAccount may change on workloads and Pods (./webhook-write-policy.ts): the
   * ValidatingAdmissionPolicy narrowing its patch rights, and its binding.
   */
  readonly writePolicy: WebhookWritePolicy;
  /**
   * Which Secrets the ServiceAccount may write (./webhook-secret-policy.ts): the pull Secret's
   * name and pull types, and its own serving Secret; and its binding.
   */
  readonly secretPolicy: WebhookWritePolicy;
  /**
   * What the ServiceAccount may change on our webhook configurations (./webhook-registration-policy.ts):
   * each webhook's caBundle only; and its binding.
   */
  readonly registrationPolicy: WebhookWritePolicy;
  /**
   * Which admission policy, binding and parameters the ServiceAccount may write
   * (./webhook-admission-policy-rights.ts): ours by name only; and its binding.
   */
  readonly admissionPolicyRights: WebhookWritePolicy;
  readonly deployment: V1Deployment;
  readonly podDisruptionBudget: V1PodDisruptionBudget;
  readonly service: V1Service;
  readonly networkPolicies: WebhookNetworkPolicies;
  readonly mutatingWebhookConfiguration: V1MutatingWebhookConfiguration;
  /** Present when the drift channel is enabled. */
  readonly validatingWebhookConfiguration?: V1ValidatingWebhookConfiguration;
  /** The metrics Service and its ServiceMonitor, with {@link WebhookManifestOptions.serviceMonitor}. */
  readonly metricsScrape?: MetricsScrape;
}

/**
 * Renders the webhook's runtime manifests (pure), under upstream's object names
 * (../api/runtime-names.ts) in every mode. RBAC is least privilege (./webhook-rbac.ts); the
 * NetworkPolicies are upstream's (./webhook-network-policies.ts).
 */
export function renderWebhookManifests(o: WebhookManifestOptions): WebhookManifests {
  const namespace = o.namespace ?? CONFIG_MAP_NAMESPACE;
  const pullSecret = o.pullSecretName ?? DEFAULT_PULL_SECRET_NAME;
  const configMap = o.configMapName ?? CONFIG_MAP_NAME;
  const meta = (
    name: string,
    namespaced = true,
  ): { name: string; namespace?: string; labels: Record<string, string> } => ({
    name,
    namespace: namespaced ? namespace : undefined,
    labels: objectLabels(o),
  });
  const subject = { kind: 'ServiceAccount', name: WEBHOOK_SERVICE_ACCOUNT, namespace };
  const rbac = 'rbac.authorization.k8s.io';
  const networkPolicies = renderWebhookNetworkPolicies(o, namespace);
  // The drift channel's attestation reads what the KCP manages here; without it nothing changes.
  const attests = (o.driftListenerUrl ?? '') !== '';
  const policyNames = networkPolicyList(networkPolicies).map((p) => p.metadata?.name ?? '');
  const perNamespace = o.restartNamespaces !== undefined;

  return {
    // No labels: the namespace is Kyma's, not ours.
    namespace: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(WEBHOOK_SERVICE_ACCOUNT) },
    clusterRole: {
      apiVersion: `${rbac}/v1`,
      kind: 'ClusterRole',
      metadata: meta(WEBHOOK_CLUSTER_ROLE, false),
      rules: [
        ...webhookClusterRules(pullSecret, namespace, perNamespace),
        ...(attests ? attestationClusterRules(perNamespace) : []),
      ],
    },
    clusterRoleBinding: {
      apiVersion: `${rbac}/v1`,
      kind: 'ClusterRoleBinding',
      metadata: meta(WEBHOOK_CLUSTER_ROLE_BINDING, false),
      roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: WEBHOOK_CLUSTER_ROLE },
      subjects: [subject],
    },
    role: {
      apiVersion: `${rbac}/v1`,
      kind: 'Role',
      metadata: meta(WEBHOOK_ROLE),
      rules: [
        ...webhookNamespaceRules(configMap, namespace, o.servingCertIssuer, perNamespace),
        ...(attests ? attestationNamespaceRules(policyNames) : []),
      ],
    },
    roleBinding: {
      apiVersion: `${rbac}/v1`,
      kind: 'RoleBinding',
      metadata: meta(WEBHOOK_ROLE_BINDING),
      roleRef: { apiGroup: rbac, kind: 'Role', name: WEBHOOK_ROLE },
      subjects: [subject],
    },
    restartRights: (o.restartNamespaces ?? []).map((ns) => ({
      role: {
        apiVersion: `${rbac}/v1`,
        kind: 'Role',
        metadata: { name: RESTART_RIGHTS_ROLE, namespace: ns, labels: objectLabels(o) },
        rules: restartRightsRules(),
      },
      binding: {
        apiVersion: `${rbac}/v1`,
        kind: 'RoleBinding',
        metadata: { name: RESTART_RIGHTS_ROLE, namespace: ns, labels: objectLabels(o) },
        roleRef: { apiGroup: rbac, kind: 'Role', name: RESTART_RIGHTS_ROLE },
        subjects: [subject],
      },
    })),
    writePolicy: renderWebhookWritePolicy(namespace, objectLabels(o)),
    secretPolicy: renderWebhookSecretPolicy(
      namespace,
      pullSecret,
      o.servingCertIssuer ?? 'own',
      objectLabels(o),
    ),
    registrationPolicy: renderWebhookRegistrationPolicy(namespace, objectLabels(o)),
    admissionPolicyRights: renderWebhookAdmissionPolicyRights(namespace, objectLabels(o)),
    deployment: renderWebhookDeployment(o, namespace, configMap),
    podDisruptionBudget: {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(WEBHOOK_PDB),
      spec: { minAvailable: 1, selector: { matchLabels: { ...WEBHOOK_SELECTOR } } },
    },
    service: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(WEBHOOK_SERVICE),
      spec: {
        selector: { ...WEBHOOK_SELECTOR },
        // Upstream's port exactly, unnamed: the API server picks an endpoint by the Service port's
        // name, so renaming it over upstream's install left no endpoint until the endpoints caught
        // up, and calls failed open (docs/webhook-hardening.md, "No fail-open in a rollout or a takeover").
        ports: [{ port: 443, targetPort: WEBHOOK_PORT, protocol: 'TCP' }],
      },
    },
    networkPolicies,
    mutatingWebhookConfiguration: renderMutatingWebhookConfiguration(o, namespace),
    validatingWebhookConfiguration: o.driftListenerUrl
      ? renderDriftWebhookConfiguration(o, namespace)
      : undefined,
    metricsScrape:
      o.serviceMonitor === true
        ? renderMetricsScrape({
            name: WEBHOOK_METRICS_SERVICE,
            namespace,
            podSelector: WEBHOOK_SELECTOR,
            portName: WEBHOOK_METRICS_PORT_NAME,
            port: WEBHOOK_METRICS_PORT,
          })
        : undefined,
  };
}

/**
 * The ValidatingAdmissionPolicies narrowing the ServiceAccount's rights, each followed by its
 * binding, in apply order (with the rights they narrow, before the Pods that use them).
 */
export function webhookPolicyList(m: WebhookManifests): readonly object[] {
  return [m.writePolicy, m.secretPolicy, m.registrationPolicy, m.admissionPolicyRights].flatMap((p) => [
    p.policy,
    p.binding,
  ]);
}

/** The manifests as a list in apply order (the webhook configurations last, once their backend exists). */
export function webhookManifestList(m: WebhookManifests): readonly object[] {
  return [
    m.namespace,
    m.serviceAccount,
    m.clusterRole,
    m.clusterRoleBinding,
    m.role,
    m.roleBinding,
    ...m.restartRights.flatMap((r) => [r.role, r.binding]),
    // With the rights it narrows, before the Pods that use them.
    ...webhookPolicyList(m),
    m.service,
    // Before the Pods: under a default-deny policy they are reachable from their first start.
    ...networkPolicyList(m.networkPolicies),
    m.deployment,
    m.podDisruptionBudget,
    m.mutatingWebhookConfiguration,
    ...(m.validatingWebhookConfiguration ? [m.validatingWebhookConfiguration] : []),
    ...(m.metricsScrape ? [m.metricsScrape.service, m.metricsScrape.serviceMonitor] : []),
  ];
}
