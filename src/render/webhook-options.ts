import { APP_NAME, APP_NAME_LABEL, VERSION_LABEL } from '../api/runtime-names.js';
import type { ServingIssuer } from '../serving-cert/serving-secret-plan.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';

/** Settings of the rendered runtime manifests. */
export interface WebhookManifestOptions {
  readonly namespace?: string;
  readonly image: string;
  /** The release: label `app.kubernetes.io/version` of every object (KIM compares the Deployment's). */
  readonly version?: string;
  readonly replicas?: number;
  /** PEM of the CA that signed the serving certificate, for `caBundle` (absent: the webhook writes it). */
  readonly caBundlePem?: string;
  /** Call this URL instead of the in-cluster Service (local landscapes, tests). */
  readonly url?: string;
  readonly failurePolicy?: 'Ignore' | 'Fail';
  readonly pullSecretName?: string;
  readonly configMapName?: string;
  readonly logLevel?: string;
  /** `rtb webhook --landscape` (the set-landscape feature's value). */
  readonly landscape?: string;
  /** Labels added to every object. */
  readonly extraLabels?: Readonly<Record<string, string>>;
  /**
   * Who writes the serving Secret and the caBundle (docs/serving-certificate.md): the webhook
   * itself (`own`, the default: KIM installs) or the KCP (`external`, direct mode), in which case the
   * Deployment runs `--serving-cert-issuer=external` and the webhook may only read the Secret.
   */
  readonly servingCertIssuer?: ServingIssuer['kind'];
  /** The KCP drift listener (`https://host:port`); enables the drift channel when set. */
  readonly driftListenerUrl?: string;
  /**
   * The user the KCP's writes on this runtime are made as (direct mode learns it per runtime):
   * the drift registration skips that user's writes, which are no drift. Without it (KIM's
   * manifests, `rtb render webhook`) only the webhook ServiceAccount's own writes are skipped.
   */
  readonly driftSkipUsername?: string | undefined;
  /**
   * The webhook Pods' PriorityClass (upstream's runtime manifests set one of their own, so that
   * the admission path is not preempted first); none when undefined.
   */
  readonly priorityClassName?: string;
  /** Also a metrics Service and a ServiceMonitor scraping it (the job label the dashboards select). */
  readonly serviceMonitor?: boolean;
  /**
   * Restart rights per namespace, as upstream binds them: a Role and RoleBinding in each of these
   * namespaces (which must exist) instead of the cluster-wide rights to read and patch workloads
   * and evict Pods, and `rtb webhook --restart-namespaces`; undefined: cluster-wide (the default).
   */
  readonly restartNamespaces?: readonly string[];
  /**
   * `rtb webhook --registry-server` per entry: where the preflight reaches a registry that is not
   * at `https://<registry>` (local registries; an address Pods reach a registry at). A URL may name
   * {@link HOST_IP_REFERENCE}: each Pod's node IP (a registry every node forwards to its Pods).
   */
  readonly registryServers?: Readonly<Record<string, string>>;
  /**
   * `rtb webhook --repair-escaped`: the runtime agent restarts the owners of escaped Pods
   * (docs/runtime-agent.md); off by default.
   */
  readonly repairEscaped?: boolean;
  /**
   * `rtb webhook --admission-policy=install`: the runtime agent installs the admission policy
   * where the runtime serves it (KIM's manifests; direct mode leaves it to the KCP).
   */
  readonly admissionPolicyInstall?: boolean;
}

/** In a registry server's URL, the IP of the node the webhook Pod runs on (the downward API's). */
export const HOST_IP_REFERENCE = '$(HOST_IP)';

/** Labels of every object we render (not the Pods': a release bump alone must not roll them). */
export function objectLabels(o: WebhookManifestOptions): Record<string, string> {
  return {
    [APP_NAME_LABEL]: APP_NAME,
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
    ...(o.version === undefined ? {} : { [VERSION_LABEL]: o.version }),
    ...o.extraLabels,
  };
}
