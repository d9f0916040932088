import type { KubernetesObject } from '@kubernetes/client-node';
import { RUNTIME_NAMESPACE, VERSION_LABEL, WATCHER_TLS_SECRET } from '../../api/runtime-names.js';
import {
  renderWebhookManifests,
  webhookPolicyList,
  type WebhookManifests,
} from '../../render/webhook-manifests.js';
import { networkPolicyList } from '../../render/webhook-network-policies.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../api/managed-labels.js';
import type { SyncSet } from './sync-set.js';

/** The webhook release to install. */
export interface WebhookRelease {
  readonly image: string;
  /** Label `app.kubernetes.io/version` of the objects (as KIM's manifests carry it); a change rolls every runtime forward. */
  readonly version: string;
  /** The webhook Pods' PriorityClass (it must exist on the runtime); none when undefined. */
  readonly priorityClassName?: string;
  /**
   * Restart rights per namespace (each must exist on every runtime): a Role and RoleBinding in
   * each instead of the cluster-wide rights; undefined: cluster-wide (the default).
   */
  readonly restartNamespaces?: readonly string[];
  /** Where the webhooks' preflight reaches registries not at `https://<registry>` (local landscapes). */
  readonly registryServers?: Readonly<Record<string, string>>;
}

/** A certificate, its key and the CAs to trust. */
export interface TlsMaterial {
  readonly certPem: string;
  readonly keyPem: string;
  readonly caPem: string;
}

/** The drift channel of one runtime: where to report, and its client certificate. */
export interface DriftSettings {
  readonly listenerUrl: string;
  /** Client certificate (CN = runtime ID, SAN = its domain), its key, and the CAs to trust for the listener. */
  readonly clientTls?: TlsMaterial;
  /** The user the KCP is on the runtime: the drift registration skips its writes (none: not known). */
  readonly kcpUsername?: string | undefined;
}

/** Where tests route admission: no kubelet runs the webhook's Pods on their runtimes. */
export interface WebhookTestRouting {
  /** Register this URL instead of the in-cluster Service. */
  readonly registrationUrl?: string;
  /** More DNS names or IP addresses for the serving certificate (the URL's host). */
  readonly extraSans?: readonly string[];
}

/** How the webhook is installed besides its release. */
export interface WebhookPlanOptions {
  /** The drift channel; off when undefined. */
  readonly drift?: DriftSettings;
  /** Register this URL instead of the in-cluster Service (tests: no kubelet runs the Pods there). */
  readonly registrationUrl?: string;
  /** The runtime agent repairs escaped Pods (the RuntimeBootstrapper's `spec.repairEscapedPods`). */
  readonly repairEscaped?: boolean;
}

/** What a runtime should hold, in the order it is applied. */
export interface RuntimePlan {
  /** Namespaces and the versioned set (trust bundle, pull Secret, ConfigMap). */
  readonly sources: readonly KubernetesObject[];
  /** ServiceAccount, RBAC, the admission policies and their bindings, drift client Secret, Service, NetworkPolicies, Deployment, PodDisruptionBudget. */
  readonly webhook: readonly KubernetesObject[];
  /** The webhook configurations (mutating, and the drift one): applied only once the Deployment is ready. */
  readonly registration: readonly KubernetesObject[];
  readonly manifests: WebhookManifests;
}

const asObject = (o: object): KubernetesObject => o;

/** The namespaces the set needs and the set itself, in apply order (pure). */
export function planSources(set: SyncSet, webhookNamespace = RUNTIME_NAMESPACE): KubernetesObject[] {
  const namespaces = new Set<string>([webhookNamespace]);
  for (const o of set.objects) if (o.metadata?.namespace) namespaces.add(o.metadata.namespace);
  return [
    ...[...namespaces].map((name) => asObject({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
    ...set.objects,
  ];
}

/**
 * The webhook objects for a release (pure). The Deployment is the one `rtb render kim` gives KIM
 * for the same release but for `--serving-cert-issuer=external`: here the KCP writes the serving
 * Secret and the caBundle (./serving-cert-state.ts), so neither is part of these objects, and the
 * registration carries no caBundle (its only writer is the protocol, under its own field manager).
 */
export function planWebhook(
  set: Pick<SyncSet, 'config'> | undefined,
  release: WebhookRelease,
  options: WebhookPlanOptions = {},
): Pick<RuntimePlan, 'webhook' | 'registration' | 'manifests'> {
  const { drift } = options;
  const manifests = renderWebhookManifests({
    image: release.image,
    servingCertIssuer: 'external',
    driftListenerUrl: drift?.listenerUrl,
    driftSkipUsername: drift?.kcpUsername,
    url: options.registrationUrl,
    pullSecretName: set?.config.imagePullSecret.name,
    version: release.version,
    priorityClassName: release.priorityClassName,
    restartNamespaces: release.restartNamespaces,
    registryServers: release.registryServers,
    repairEscaped: options.repairEscaped,
  });
  const watcherSecret: KubernetesObject[] = drift
    ? [
        asObject({
          apiVersion: 'v1',
          kind: 'Secret',
          type: 'kubernetes.io/tls',
          metadata: {
            name: WATCHER_TLS_SECRET,
            namespace: manifests.namespace.metadata?.name,
            labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [VERSION_LABEL]: release.version },
          },
          data: drift.clientTls
            ? {
                'tls.crt': Buffer.from(drift.clientTls.certPem).toString('base64'),
                'tls.key': Buffer.from(drift.clientTls.keyPem).toString('base64'),
                'ca.crt': Buffer.from(drift.clientTls.caPem).toString('base64'),
              }
            : {},
        }),
      ]
    : [];
  return {
    webhook: [
      manifests.serviceAccount,
      manifests.clusterRole,
      manifests.clusterRoleBinding,
      manifests.role,
      manifests.roleBinding,
      ...manifests.restartRights.flatMap((r) => [r.role, r.binding]),
      ...webhookPolicyList(manifests),
      ...watcherSecret,
      manifests.service,
      ...networkPolicyList(manifests.networkPolicies),
      manifests.deployment,
      manifests.podDisruptionBudget,
    ].map(asObject),
    registration: [
      asObject(manifests.mutatingWebhookConfiguration),
      ...(manifests.validatingWebhookConfiguration
        ? [asObject(manifests.validatingWebhookConfiguration)]
        : []),
    ],
    manifests,
  };
}

/** Plans all of a runtime's objects from the set and the release (pure). */
export function planRuntime(
  set: SyncSet,
  release: WebhookRelease,
  options: WebhookPlanOptions = {},
): RuntimePlan {
  return { sources: planSources(set), ...planWebhook(set, release, options) };
}

/**
 * The order of removal: the registration first, so no API server keeps calling a webhook that
 * is going away, then the webhook, then the synced objects. Namespaces stay (others use them).
 */
export function removalOrder(
  plan: Pick<RuntimePlan, 'registration' | 'webhook' | 'sources'>,
): KubernetesObject[] {
  return [
    ...plan.registration,
    ...[...plan.webhook].reverse(),
    ...[...plan.sources].reverse().filter((o) => o.kind !== 'Namespace'),
  ];
}
