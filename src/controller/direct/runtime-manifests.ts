import type { KubernetesObject } from '@kubernetes/client-node';
import {
  RUNTIME_NAMESPACE,
  VERSION_LABEL,
  WATCHER_TLS_SECRET,
  WEBHOOK_TLS_SECRET,
} from '../../api/runtime-names.js';
import { renderWebhookManifests, type WebhookManifests } from '../../render/webhook-manifests.js';
import { networkPolicyList } from '../../render/webhook-network-policies.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../webhook/managed-labels.js';
import type { SyncSet } from './sync-set.js';

/** The webhook release to install. */
export interface WebhookRelease {
  readonly image: string;
  /** Label `app.kubernetes.io/version` of the objects (as KIM's manifests carry it); a change rolls every runtime forward. */
  readonly version: string;
}

/** TLS material of one runtime's webhook. */
export interface WebhookTls {
  readonly certPem: string;
  readonly keyPem: string;
  readonly caPem: string;
}

/** The drift channel of one runtime: where to report, and its client certificate. */
export interface DriftSettings {
  readonly listenerUrl: string;
  /** Client certificate (CN = runtime ID, SAN = its domain), its key, and the CAs to trust for the listener. */
  readonly clientTls?: WebhookTls;
}

/** What a runtime should hold, in the order it is applied. */
export interface RuntimePlan {
  /** Namespaces and the versioned set (trust bundle, pull Secret, ConfigMap). */
  readonly sources: readonly KubernetesObject[];
  /** ServiceAccount, RBAC, TLS Secrets, Service, NetworkPolicies, Deployment, PodDisruptionBudget. */
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
 * The webhook objects for a release (pure); TLS may be absent when only names are needed (removal).
 * The Deployment is the one `rtb render kim` gives KIM for the same release; the serving
 * certificate's Secret is read by the webhook through the API, not mounted.
 */
export function planWebhook(
  set: Pick<SyncSet, 'config'> | undefined,
  release: WebhookRelease,
  tls?: WebhookTls,
  drift?: DriftSettings,
): Pick<RuntimePlan, 'webhook' | 'registration' | 'manifests'> {
  const manifests = renderWebhookManifests({
    image: release.image,
    ...(drift ? { driftListenerUrl: drift.listenerUrl } : {}),
    ...(tls ? { caBundlePem: tls.caPem } : {}),
    ...(set ? { pullSecretName: set.config.imagePullSecret.name } : {}),
    version: release.version,
  });
  const tlsSecret: KubernetesObject = asObject({
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: {
      name: WEBHOOK_TLS_SECRET,
      namespace: manifests.namespace.metadata?.name,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [VERSION_LABEL]: release.version },
    },
    data: tls
      ? {
          'tls.crt': Buffer.from(tls.certPem).toString('base64'),
          'tls.key': Buffer.from(tls.keyPem).toString('base64'),
          'ca.crt': Buffer.from(tls.caPem).toString('base64'),
        }
      : {},
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
      tlsSecret,
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

/** Plans all of a runtime's objects from the set, the release and its TLS material (pure). */
export function planRuntime(
  set: SyncSet,
  release: WebhookRelease,
  tls: WebhookTls,
  drift?: DriftSettings,
): RuntimePlan {
  return { sources: planSources(set), ...planWebhook(set, release, tls, drift) };
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
