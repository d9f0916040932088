/**
 * What an upstream install (the Go rt-bootstrapper, `kustomize build config/default` with
 * `namePrefix: rt-bootstrapper-` and `namespace: kyma-system`) leaves on a runtime once KIM has
 * applied our manifests over it, and what of it our webhook removes (pure; the I/O is in
 * ../runtime-agent/upstream-cleanup.ts).
 *
 * Objects that share our names (Deployment, ServiceAccount, Service, manager and leader-election
 * RBAC, MutatingWebhookConfiguration, ConfigMap, the three NetworkPolicies) are ours after KIM's
 * apply and are not listed.
 * KIM's server-side apply keeps the fields of upstream's Deployment that ours does not set (they
 * belong to the manager that created it): the serving-certificate volume and its mount, and
 * `priorityClassName`. That decides two of the kept objects below.
 *
 * Read from upstream's config/: rbac/ (pod_restarter_role*.yaml, role.yaml), network-policy/,
 * webhook/manifests.yaml, manager/manager.yaml, default/kustomization.yaml; the metrics objects
 * are kubebuilder's scaffold, which default/kustomization.yaml includes.
 */
import {
  APP_NAME,
  APP_NAME_LABEL,
  MUTATING_WEBHOOK_CONFIGURATION,
  POD_RESTARTER_CLUSTER_ROLE,
  POD_RESTARTER_ROLE_BINDING,
  RUNTIME_NAMESPACE,
  WEBHOOK_SELECTOR,
  WEBHOOK_SERVICE_ACCOUNT,
} from './runtime-names.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from './managed-labels.js';
import { asJsonObject } from './json-object.js';

/** An object as the API server returns it; only what the guards read. */
export type FoundObject = Readonly<Record<string, unknown>>;

/** One upstream-only object we delete, and how to tell it is really upstream's. */
export interface UpstreamLeftover {
  readonly apiVersion: string;
  readonly kind: string;
  /** The resource's plural, for its path and our RBAC. */
  readonly resource: string;
  /** Absent for cluster-scoped objects. */
  readonly namespace?: string;
  readonly name: string;
  /** Why it goes (logged with the removal). */
  readonly reason: string;
  /**
   * Whether the object found under that name is upstream's (so a user's or another component's
   * object of the same name stays). Ours (labelled managed-by rt-bootstrapper) never qualify.
   */
  readonly isUpstreams: (found: FoundObject) => boolean;
}

/** Upstream objects we deliberately keep, and why. */
export interface KeptUpstreamObjects {
  readonly kind: string;
  readonly namespace?: string;
  /** Their names as upstream's overlays render them. */
  readonly names: readonly string[];
  readonly why: string;
}

/** Upstream's kustomize `namePrefix` is its app name. */
const UPSTREAM_NAME = APP_NAME;
const METRICS_AUTH_ROLE = `${UPSTREAM_NAME}-metrics-auth-role`;

const record = (v: unknown): Readonly<Record<string, unknown>> => asJsonObject(v) ?? {};
const list = (v: unknown): readonly unknown[] => (Array.isArray(v) ? v : []);
const labelsOf = (o: FoundObject): Readonly<Record<string, unknown>> => record(record(o.metadata).labels);

/** Not ours: our objects carry our managed-by label (KIM's apply sets it over upstream's). */
const notOurs = (o: FoundObject): boolean => labelsOf(o)[MANAGED_BY_LABEL] !== MANAGED_BY_VALUE;
/** Carries upstream's name label (kubebuilder's scaffold labels every object it writes so). */
const upstreamLabelled = (o: FoundObject): boolean => labelsOf(o)[APP_NAME_LABEL] === UPSTREAM_NAME;
/** `selector` selects exactly upstream's (and our) webhook Pods. */
const selectsWebhookPods = (selector: unknown): boolean => {
  const s = record(selector);
  const keys = Object.keys(WEBHOOK_SELECTOR);
  return Object.keys(s).length === keys.length && keys.every((k) => s[k] === WEBHOOK_SELECTOR[k]);
};
const bindsOurServiceAccount = (o: FoundObject): boolean =>
  list(o.subjects).some((s) => {
    const r = record(s);
    return (
      r.kind === 'ServiceAccount' && r.name === WEBHOOK_SERVICE_ACCOUNT && r.namespace === RUNTIME_NAMESPACE
    );
  });
const rolesRef = (o: FoundObject, kind: string, name: string): boolean => {
  const r = record(o.roleRef);
  return r.kind === kind && r.name === name;
};

/** A RoleBinding of upstream's pod-restarter ClusterRole in `namespace`. */
const podRestarterBinding = (namespace: string): UpstreamLeftover => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'RoleBinding',
  resource: 'rolebindings',
  namespace,
  name: POD_RESTARTER_ROLE_BINDING,
  reason:
    'grants our ServiceAccount deleting Pods, which we never do (stale Pods are restarted through their owners)',
  isUpstreams: (o) =>
    notOurs(o) && upstreamLabelled(o) && rolesRef(o, 'ClusterRole', POD_RESTARTER_CLUSTER_ROLE),
});

/** The upstream objects our webhook deletes once it serves, in this order (bindings before roles). */
export const UPSTREAM_LEFTOVERS: readonly UpstreamLeftover[] = [
  {
    apiVersion: 'v1',
    kind: 'Service',
    resource: 'services',
    namespace: RUNTIME_NAMESPACE,
    name: `${UPSTREAM_NAME}-controller-manager-metrics-service`,
    reason: "selects our Pods on upstream's metrics port, where nothing answers (our metrics are on 9443)",
    isUpstreams: (o) => notOurs(o) && selectsWebhookPods(record(o.spec).selector),
  },
  {
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    resource: 'servicemonitors',
    namespace: RUNTIME_NAMESPACE,
    name: `${UPSTREAM_NAME}-controller-manager-metrics-monitor`,
    reason: "scrapes upstream's metrics Service, which no longer answers",
    isUpstreams: (o) => notOurs(o) && selectsWebhookPods(record(record(o.spec).selector).matchLabels),
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    resource: 'clusterrolebindings',
    name: `${UPSTREAM_NAME}-metrics-auth-rolebinding`,
    reason:
      "grants our ServiceAccount token and access reviews for upstream's metrics endpoint, which we do not serve",
    isUpstreams: (o) =>
      notOurs(o) && rolesRef(o, 'ClusterRole', METRICS_AUTH_ROLE) && bindsOurServiceAccount(o),
  },
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    resource: 'clusterroles',
    name: METRICS_AUTH_ROLE,
    reason: "only upstream's metrics endpoint used it (its binding is removed)",
    isUpstreams: (o) =>
      notOurs(o) &&
      list(o.rules).length > 0 &&
      list(o.rules).every((r) =>
        list(record(r).resources).every((x) => x === 'tokenreviews' || x === 'subjectaccessreviews'),
      ),
  },
  podRestarterBinding(RUNTIME_NAMESPACE),
  podRestarterBinding('istio-system'),
  {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    resource: 'clusterroles',
    name: POD_RESTARTER_CLUSTER_ROLE,
    reason: 'only the pod-restarter bindings used it (they are removed)',
    isUpstreams: (o) => notOurs(o) && upstreamLabelled(o),
  },
];

/** An annotation that an upstream overlay put on an object that is ours now. */
export interface UpstreamAnnotation {
  readonly apiVersion: string;
  readonly resource: string;
  readonly name: string;
  readonly annotation: string;
  readonly reason: string;
}

/**
 * Annotations removed from our own objects. Upstream's k3d overlay asks cert-manager's CA
 * injector to write `caBundle` of the MutatingWebhookConfiguration; the annotation outlives an
 * apply by another manager, and the injector would then fight our own caBundle writer.
 */
export const UPSTREAM_ANNOTATIONS: readonly UpstreamAnnotation[] = [
  {
    apiVersion: 'admissionregistration.k8s.io/v1',
    resource: 'mutatingwebhookconfigurations',
    name: MUTATING_WEBHOOK_CONFIGURATION,
    annotation: 'cert-manager.io/inject-ca-from',
    reason: "cert-manager's CA injector would overwrite the caBundle our webhook keeps",
  },
];

/** Upstream objects we keep on purpose (documentation; tests check none is also removed). */
export const UPSTREAM_KEPT: readonly KeptUpstreamObjects[] = [
  {
    kind: 'PriorityClass',
    names: [`${UPSTREAM_NAME}-priority-class`],
    why: "our Deployment keeps upstream's priorityClassName after KIM's apply; without the class no new webhook Pod would be admitted",
  },
  {
    kind: 'Secret',
    namespace: RUNTIME_NAMESPACE,
    names: [`${UPSTREAM_NAME}-webhook-cert`, 'webhook-server-cert'],
    why: "our Deployment keeps upstream's certificate volume after KIM's apply; without the Secret no new webhook Pod would start",
  },
  {
    kind: 'Certificate and Issuer (cert.gardener.cloud, or cert-manager.io in the k3d overlay)',
    namespace: RUNTIME_NAMESPACE,
    names: [
      `${UPSTREAM_NAME}-kyma`,
      'kyma',
      `${UPSTREAM_NAME}-serving-cert`,
      `${UPSTREAM_NAME}-selfsigned-issuer`,
    ],
    why: 'they keep that Secret valid, and a certificate manager may delete the Secret with its Certificate; they point at no endpoint of ours',
  },
  {
    kind: 'ClusterRole',
    names: [`${UPSTREAM_NAME}-metrics-reader`],
    why: 'grants nothing to anyone unless bound, and a monitoring binding may refer to it',
  },
];
