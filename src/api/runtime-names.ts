/**
 * The names of our objects on a runtime: upstream's (its kustomize output, `namePrefix:
 * rt-bootstrapper-`, namespace `kyma-system`, DESIGN.md §8), in every mode, so a KIM install, a
 * direct-mode install and an existing upstream install all converge on one set of objects.
 */

/** Namespace of the webhook and its objects. */
export const RUNTIME_NAMESPACE = 'kyma-system';
/** Deployment and ServiceAccount of the webhook (KIM waits for this Deployment by name). */
export const WEBHOOK_DEPLOYMENT = 'rt-bootstrapper-controller-manager';
/** ServiceAccount of the webhook's Pods. */
export const WEBHOOK_SERVICE_ACCOUNT = WEBHOOK_DEPLOYMENT;
/** The container of the webhook Deployment (upstream's name: an apply merges containers by name). */
export const WEBHOOK_CONTAINER = 'manager';
/** Service in front of the webhook (443 → 9443). */
export const WEBHOOK_SERVICE = 'rt-bootstrapper-webhook-service';
/**
 * Service exposing the webhook's metrics (`rtb render webhook --service-monitor`); the job label of
 * its series, which `rtb render monitoring`'s queries select.
 */
export const WEBHOOK_METRICS_SERVICE = 'rt-bootstrapper-webhook-metrics';
/** The MutatingWebhookConfiguration. */
export const MUTATING_WEBHOOK_CONFIGURATION = 'rt-bootstrapper-mutating-webhook-configuration';
/** The one webhook inside it: upstream's entry name, so an apply over upstream's replaces it. */
export const MUTATING_WEBHOOK_NAME = 'mpod-v1.kb.io';
/**
 * The Service path of {@link MUTATING_WEBHOOK_NAME}: upstream's (controller-runtime's path for the
 * core/v1 Pod defaulter), so a registration left by an upstream install keeps working against us.
 */
export const MUTATE_PATH_UPSTREAM = '/mutate--v1-pod';
/** The webhook's own mutation path (served like {@link MUTATE_PATH_UPSTREAM}). */
export const MUTATE_PATH = '/mutate';
/** The path of the drift (validating) webhook. */
export const VALIDATE_PATH = '/validate';
/** The ValidatingWebhookConfiguration of the drift channel (ours; upstream has none). */
export const VALIDATING_WEBHOOK_CONFIGURATION = 'rt-bootstrapper-validating-webhook-configuration';
/** The one webhook inside {@link VALIDATING_WEBHOOK_CONFIGURATION}: reports tampering with our objects. */
export const VALIDATING_WEBHOOK_NAME = 'drift.rt-bootstrapper.kyma-project.io';
/** The ClusterRole of the webhook (upstream's name) and its binding. */
export const WEBHOOK_CLUSTER_ROLE = 'rt-bootstrapper-manager-role';
/** Binding of {@link WEBHOOK_CLUSTER_ROLE}. */
export const WEBHOOK_CLUSTER_ROLE_BINDING = 'rt-bootstrapper-manager-rolebinding';
/** Upstream's second ClusterRole (restarts Pods on trust-bundle rotation). */
export const POD_RESTARTER_CLUSTER_ROLE = 'rt-bootstrapper-pod-restarter-role';
/** Upstream binds {@link POD_RESTARTER_CLUSTER_ROLE} with RoleBindings of this name (kyma-system, istio-system). */
export const POD_RESTARTER_ROLE_BINDING = 'rt-bootstrapper-pod-restarter-rolebinding';
/** Namespaced Role of the webhook (the config ConfigMap, the serving Secret, the Lease): upstream's leader-election Role. */
export const WEBHOOK_ROLE = 'rt-bootstrapper-leader-election-role';
/** Binding of {@link WEBHOOK_ROLE}. */
export const WEBHOOK_ROLE_BINDING = 'rt-bootstrapper-leader-election-rolebinding';
/**
 * With per-namespace restart rights (`rtb render webhook --restart-namespaces`): the Role and its
 * RoleBinding in each listed namespace that let the trust-bundle restarter restart there.
 */
export const RESTART_RIGHTS_ROLE = 'rt-bootstrapper-trust-restarter';
/** PodDisruptionBudget of the webhook. */
export const WEBHOOK_PDB = 'rt-bootstrapper-controller-manager';

/**
 * The Secret holding the webhook's serving certificate, read through the API by every replica
 * (`tls.crt`, `tls.key`, `ca.crt` = every CA the caBundle must hold; `ca.key` only when the webhook
 * issued its own CA). Written by the webhook's own writer (KIM installs) or by the KCP (direct mode).
 */
export const WEBHOOK_TLS_SECRET = 'rt-bootstrapper-webhook-tls';
/** The Lease electing the one replica that writes {@link WEBHOOK_TLS_SECRET} and the caBundle. */
export const WEBHOOK_CERT_LEASE = 'rt-bootstrapper-webhook-cert';
/**
 * The field manager of every write of ours (server-side apply, creates, the copier's copies): drift
 * detection takes writes under it for repairs, not drift.
 */
export const FIELD_MANAGER = 'rt-bootstrapper';
/**
 * Field manager of the webhook's caBundle writes: upstream's own, so the field an upstream
 * install owned passes to us without a conflict.
 */
export const CA_BUNDLE_FIELD_MANAGER = 'rt-bootstrapper-webhook';
/** The Secret with a runtime's drift client certificate (`tls.crt`, `tls.key`, `ca.crt`). */
export const WATCHER_TLS_SECRET = 'rt-bootstrapper-watcher-tls';

/** Label on the Deployment that KIM compares with the first Deployment of its manifests. */
export const VERSION_LABEL = 'app.kubernetes.io/version';
/** Label `app.kubernetes.io/name` of upstream's objects and ours; the MutatingWebhookConfiguration skips Pods carrying it. */
export const APP_NAME_LABEL = 'app.kubernetes.io/name';
/** The value of {@link APP_NAME_LABEL} (also upstream's kustomize name prefix, without its dash). */
export const APP_NAME = 'rt-bootstrapper';

/**
 * Namespaces the webhook's registration leaves out (its namespaceSelector): no Pod there is
 * admitted by it, so none there counts as escaped either.
 */
export const REGISTRATION_EXCLUDED_NAMESPACES: readonly string[] = ['kube-system'];
/**
 * Upstream's Pod selector: a Deployment's selector is immutable, so ours must be the same for an
 * apply over an upstream install to succeed.
 */
export const WEBHOOK_SELECTOR: Readonly<Record<string, string>> = {
  'control-plane': 'controller-manager',
  [APP_NAME_LABEL]: APP_NAME,
};

/** The webhook container's port (upstream's name and number; the Service targets it). */
export const WEBHOOK_PORT = 9443;
/** Name of {@link WEBHOOK_PORT} in the container (upstream's: an apply merges ports by number). */
export const WEBHOOK_PORT_NAME = 'webhook-server';

/**
 * The webhook's plain-HTTP metrics port: upstream's (its metrics NetworkPolicy admits scrapers
 * to it), apart from the webhook's port so that only labelled scrapers reach the metrics.
 */
export const WEBHOOK_METRICS_PORT = 8080;
/** Name of {@link WEBHOOK_METRICS_PORT} in the container. */
export const WEBHOOK_METRICS_PORT_NAME = 'metrics';

/*
 * NetworkPolicies: upstream's three under upstream's names (Kyma's `kyma-project.io--` convention
 * after the `rt-bootstrapper-` prefix), so an apply over an upstream install updates them.
 */
/** Lets anyone reach the webhook port (the API server's source address is not known in advance). */
export const NETWORK_POLICY_WEBHOOK_INGRESS =
  'rt-bootstrapper-kyma-project.io--ingress-allow-webhook-traffic';
/** Lets labelled scrapers of the webhook's namespace reach the metrics port. */
export const NETWORK_POLICY_METRICS_INGRESS =
  'rt-bootstrapper-kyma-project.io--rt-bootstrapper-allow-metrics-traffic';
/** Lets the webhook reach the API server (port 443). */
export const NETWORK_POLICY_API_SERVER_EGRESS =
  'rt-bootstrapper-kyma-project.io--rt-bootstrapper--allow-egress-to-apiserver';
/** Ours (upstream has no drift channel): lets the webhook resolve and reach the KCP drift listener. */
export const NETWORK_POLICY_DRIFT_EGRESS =
  'rt-bootstrapper-kyma-project.io--rt-bootstrapper--allow-egress-to-kcp';
/** The Pod label of Kyma's metrics scrapers (upstream's metrics policy admits Pods carrying it). */
export const METRICS_SCRAPER_LABEL = 'networking.kyma-project.io/metrics-scraping';

/*
 * KIM's installer (interim mode, DESIGN.md §8), on the KCP: it reads our manifests from this
 * ConfigMap and applies them with this field manager.
 */
/** Namespace of KIM's manifests ConfigMap on the KCP. */
export const KIM_MANIFESTS_NAMESPACE = 'kcp-system';
/** KIM's manifests ConfigMap (its flag `--runtime-bootstrapper-manifests-config-map-name`). */
export const KIM_MANIFESTS_CONFIG_MAP = 'runtime-bootstrapper-manifests';
/** The key of {@link KIM_MANIFESTS_CONFIG_MAP} that KIM reads. */
export const KIM_MANIFESTS_KEY = 'manifests.yaml';
/** KIM's field manager for every object it applies on a runtime. */
export const KIM_FIELD_MANAGER = 'kim-bootstrapper';

/** The DNS names the serving certificate must cover for {@link WEBHOOK_SERVICE} in `namespace`. */
export function webhookServiceDnsNames(
  namespace: string = RUNTIME_NAMESPACE,
  service: string = WEBHOOK_SERVICE,
): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
  ];
}
