import type { V1PolicyRule } from '@kubernetes/client-node';
import { REGISTRY_CACHE_API } from '../api/registry-caches.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../api/webhook-status.js';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  RESTART_RIGHTS_ROLE,
  VALIDATING_WEBHOOK_CONFIGURATION,
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
} from '../api/runtime-names.js';
import { RESTARTER_LEASE } from '../api/trust-stamp.js';
import { PREFLIGHT_SECRET } from '../api/workload-health.js';
import type { ServingIssuer } from '../serving-cert/serving-secret-plan.js';
import { UPSTREAM_LEFTOVERS, type UpstreamLeftover } from '../api/upstream-leftovers.js';
import { WEBHOOK_WRITE_POLICY } from './webhook-write-policy.js';
import { WEBHOOK_SECRET_POLICY } from './webhook-secret-policy.js';
import { WEBHOOK_REGISTRATION_POLICY } from './webhook-registration-policy.js';
import { WEBHOOK_ADMISSION_POLICY_POLICY } from './webhook-admission-policy-rights.js';
import { ADMISSION_POLICY_NAME } from './admission-policy.js';

/** The admission policies narrowing the ServiceAccount's writes; each binding has its policy's name. */
const POLICIES = [
  WEBHOOK_WRITE_POLICY,
  WEBHOOK_SECRET_POLICY,
  WEBHOOK_REGISTRATION_POLICY,
  WEBHOOK_ADMISSION_POLICY_POLICY,
];

const read = (): string[] => ['get', 'list', 'watch'];
const groupOf = (apiVersion: string): string =>
  apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';

/** get + delete of the listed upstream leftovers, by name, one rule per resource (in list order). */
function cleanupRules(leftovers: readonly UpstreamLeftover[]): V1PolicyRule[] {
  const byResource = new Map<string, { group: string; resource: string; names: string[] }>();
  for (const l of leftovers) {
    const group = groupOf(l.apiVersion);
    const key = `${group}/${l.resource}`;
    const entry = byResource.get(key) ?? { group, resource: l.resource, names: [] };
    if (!entry.names.includes(l.name)) entry.names.push(l.name);
    byResource.set(key, entry);
  }
  return [...byResource.values()].map((e) => ({
    apiGroups: [e.group],
    resources: [e.resource],
    resourceNames: e.names,
    verbs: ['get', 'delete'],
  }));
}

/**
 * The webhook's cluster-wide rules (least privilege: by name wherever the verb allows it; list
 * and watch by name work through a `metadata.name` field selector): namespaces read-only; nodes listed and watched (kubelet versions); the
 * pull Secret and its copies in every namespace (create cannot be limited by name, the name is in
 * the body; delete by any name, for copies under earlier names, the policy narrowing it); events; the caBundle of our two webhook configurations (patch also removes the
 * annotation an upstream overlay left, ../api/upstream-leftovers.ts); removing upstream's leftovers outside `namespace`;
 * and the trust-bundle restarter's ({@link trustRestartRules}; with `perNamespace`, its restart
 * rights are in a Role per namespace instead, {@link restartRightsRules}).
 */
export function webhookClusterRules(
  pullSecret: string,
  namespace: string,
  perNamespace = false,
): V1PolicyRule[] {
  return [
    ...trustRestartRules(perNamespace),
    { apiGroups: [''], resources: ['namespaces'], verbs: read() },
    // The nodes' kubelet versions: a kubelet that cannot read the served ClusterTrustBundle
    // version rules the mount out (../webhook/trust-capability/node-kubelets.ts).
    { apiGroups: [''], resources: ['nodes'], verbs: ['list', 'watch'] },
    // Customers' registry caches, listed (their hosts alone are read; ../runtime-agent/registry-caches/).
    { apiGroups: [REGISTRY_CACHE_API.group], resources: [REGISTRY_CACHE_API.resource], verbs: ['list'] },
    // Create and delete by any name: the name of a create is in the body, and the sweep deletes
    // copies under earlier pull-Secret names (../runtime-agent/pull-secret/renamed-copy-sweeper.ts). The API server's
    // policy (./webhook-secret-policy.ts) narrows both to our own copies; neither reads a Secret.
    { apiGroups: [''], resources: ['secrets'], verbs: ['create', 'delete'] },
    {
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: [pullSecret],
      verbs: [...read(), 'update', 'patch'],
    },
    { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['mutatingwebhookconfigurations'],
      resourceNames: [MUTATING_WEBHOOK_CONFIGURATION],
      verbs: [...read(), 'patch'],
    },
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingwebhookconfigurations'],
      resourceNames: [VALIDATING_WEBHOOK_CONFIGURATION],
      verbs: [...read(), 'patch'],
    },
    ...admissionPolicyRules(),
    ...cleanupRules(UPSTREAM_LEFTOVERS.filter((l) => l.namespace !== namespace)),
  ];
}

/**
 * The runtime agent installs the admission policy and its binding
 * (../runtime-agent/admission-policy/), by name only: it creates them by server-side apply, whose
 * create the API server authorizes with the object's name (a POST has none, so it is refused), and
 * the API server exempts these kinds from admission policies, so RBAC's name is their only bound.
 * And the API server's check that the writer of a policy may read its kind of parameters, passed
 * without a read of any ConfigMap.
 */
export function admissionPolicyRules(): V1PolicyRule[] {
  return [
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['mutatingadmissionpolicies', 'mutatingadmissionpolicybindings'],
      resourceNames: [ADMISSION_POLICY_NAME],
      verbs: ['create', 'get', 'update', 'patch', 'delete'],
    },
    // The API server writes a policy with ConfigMap parameters only for a user who may get every
    // ConfigMap: it asks for `get` of name "*" in namespace "*". RBAC compares resourceNames
    // literally and no ConfigMap can be named "*", so this passes that check and reads nothing.
    { apiGroups: [''], resources: ['configmaps'], resourceNames: ['*'], verbs: ['get'] },
  ];
}

/**
 * The trust-bundle stamp and restarter (docs/trust-restart.md): read ClusterTrustBundles (public
 * certificates; the name comes from the config, unknown when rendering); list and watch Pods (the
 * restarter's label selector), and patch them (our label on Pods an upstream install stamped,
 * a merge patch of labels alone); read ReplicaSets (a Pod's Deployment); read and patch the three
 * rollable kinds (one annotation on their Pod template; the status annotation on our own
 * Deployment); evict Pods of other owners. Never a Pod delete. The write policy
 * (./webhook-write-policy.ts) narrows each patch to that annotation and that label. With
 * `perNamespace`, only the cluster-wide part (the bundle, the Pods' list, watch and label); the
 * rest is {@link restartRightsRules}, in a Role per namespace.
 */
export function trustRestartRules(perNamespace = false): V1PolicyRule[] {
  return [
    { apiGroups: ['certificates.k8s.io'], resources: ['clustertrustbundles'], verbs: read() },
    { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'patch'] },
    ...(perNamespace ? [] : restartRightsRules()),
  ];
}

/**
 * The restarter's rights to restart: read ReplicaSets (a Pod's Deployment), read and patch the
 * three rollable kinds, evict Pods. Cluster-wide by default; with per-namespace restart rights, a
 * Role of these in each listed namespace.
 */
export function restartRightsRules(): V1PolicyRule[] {
  return [
    { apiGroups: [''], resources: ['pods/eviction'], verbs: ['create'] },
    { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get'] },
    {
      apiGroups: ['apps'],
      resources: ['deployments', 'statefulsets', 'daemonsets'],
      verbs: ['get', 'patch'],
    },
  ];
}

/**
 * The webhook's rules in its own namespace: its ConfigMap (read), its serving-certificate Secret
 * (read and write, created through the cluster rule, and the Lease electing its one writer; only
 * read when the KCP writes it, so a replica of an earlier install still running its own writer
 * cannot write beside the KCP), in direct mode the status report and the preflight's candidate
 * Secret (read), the Pods of an install the writer takes over (listed, watched), the runtime
 * agent's Lease (the trust restarter's name: docs/runtime-agent.md), and removing upstream's
 * leftovers in that namespace. With
 * per-namespace restart rights, also the restarter's status on the webhook's own Deployment
 * (cluster-wide rights include it otherwise).
 */
export function webhookNamespaceRules(
  configMap: string,
  namespace: string,
  issuer: ServingIssuer['kind'] = 'own',
  perNamespace = false,
): V1PolicyRule[] {
  const own = issuer === 'own';
  const leases = own ? [WEBHOOK_CERT_LEASE, RESTARTER_LEASE] : [RESTARTER_LEASE];
  return [
    { apiGroups: [''], resources: ['configmaps'], resourceNames: [configMap], verbs: read() },
    {
      apiGroups: [''],
      resources: ['secrets'],
      resourceNames: [WEBHOOK_TLS_SECRET],
      verbs: own ? [...read(), 'update', 'patch'] : read(),
    },
    // Direct mode: the status report the KCP reads (created on first write, then patched).
    ...(own
      ? []
      : [
          { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
          {
            apiGroups: [''],
            resources: ['configmaps'],
            resourceNames: [WEBHOOK_STATUS_CONFIG_MAP],
            verbs: [...read(), 'patch'],
          },
          // The candidate set the KCP hands canary runtimes for the preflight (read only, by name).
          { apiGroups: [''], resources: ['secrets'], resourceNames: [PREFLIGHT_SECRET], verbs: read() },
        ]),
    // The Lease electing the certificate writer (own issuer only) and the runtime agent's (the
    // trust restarter's name: an upgrade elects one leader across both releases).
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: leases,
      verbs: [...read(), 'update', 'patch'],
    },
    // The writer keeps a CA Pods of an install it takes over may serve with (own issuer only).
    ...(own ? [{ apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] }] : []),
    ...cleanupRules(UPSTREAM_LEFTOVERS.filter((l) => l.namespace === namespace)),
    // The trust-bundle projection probe: a Pod created with dryRun=All only, never stored
    // (dry-run asks for the create right; ../webhook/trust-capability/probe-pod.ts).
    { apiGroups: [''], resources: ['pods'], verbs: ['create'] },
    // The restarter's status annotation (../runtime-agent/trust-restart/restart-status.ts).
    ...(perNamespace
      ? [
          {
            apiGroups: ['apps'],
            resources: ['deployments'],
            resourceNames: [WEBHOOK_DEPLOYMENT],
            verbs: ['get', 'patch'],
          },
        ]
      : []),
    // The admission policy's parameters, which the runtime agent writes (created by server-side
    // apply, authorized with the name).
    {
      apiGroups: [''],
      resources: ['configmaps'],
      resourceNames: [ADMISSION_POLICY_NAME],
      verbs: ['create', 'get', 'update', 'patch'],
    },
  ];
}

const getByName = (group: string, resource: string, names: readonly string[]): V1PolicyRule => ({
  apiGroups: [group],
  resources: [resource],
  resourceNames: [...names],
  verbs: ['get'],
});

/**
 * With the drift channel, the attestation (../drift/attestor.ts) reads every object the KCP
 * manages on the runtime. The other rules already let the webhook read the namespaces, the set
 * (trust bundle, pull Secret, ConfigMap), the Deployment, the serving Secret and both webhook
 * configurations; these add `get`, by name, of our ClusterRole and its binding, and of the
 * admission policies and their bindings (./webhook-write-policy.ts, ./webhook-secret-policy.ts,
 * ./webhook-registration-policy.ts); with per-namespace restart rights, of the
 * Roles and RoleBindings of those rights (by name, in every namespace: a read of two small objects).
 */
export function attestationClusterRules(perNamespace = false): V1PolicyRule[] {
  const rbac = 'rbac.authorization.k8s.io';
  const admission = 'admissionregistration.k8s.io';
  return [
    getByName(rbac, 'clusterroles', [WEBHOOK_CLUSTER_ROLE]),
    getByName(rbac, 'clusterrolebindings', [WEBHOOK_CLUSTER_ROLE_BINDING]),
    getByName(admission, 'validatingadmissionpolicies', POLICIES),
    getByName(admission, 'validatingadmissionpolicybindings', POLICIES),
    ...(perNamespace
      ? [
          getByName(rbac, 'roles', [RESTART_RIGHTS_ROLE]),
          getByName(rbac, 'rolebindings', [RESTART_RIGHTS_ROLE]),
        ]
      : []),
  ];
}

/**
 * The rest of the attestation's reads, in the webhook's namespace, by name (one rule per
 * resource, so no name is granted on another kind): the ServiceAccount, the Role and its binding,
 * the drift client Secret, the Service, the `networkPolicies` rendered beside it and the
 * PodDisruptionBudget.
 */
export function attestationNamespaceRules(networkPolicies: readonly string[]): V1PolicyRule[] {
  const rbac = 'rbac.authorization.k8s.io';
  return [
    getByName('', 'serviceaccounts', [WEBHOOK_SERVICE_ACCOUNT]),
    getByName(rbac, 'roles', [WEBHOOK_ROLE]),
    getByName(rbac, 'rolebindings', [WEBHOOK_ROLE_BINDING]),
    getByName('', 'secrets', [WATCHER_TLS_SECRET]),
    getByName('', 'services', [WEBHOOK_SERVICE]),
    getByName('networking.k8s.io', 'networkpolicies', networkPolicies),
    getByName('policy', 'poddisruptionbudgets', [WEBHOOK_PDB]),
  ];
}
