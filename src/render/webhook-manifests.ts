import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Deployment,
  V1MutatingWebhookConfiguration,
  V1Namespace,
  V1PodDisruptionBudget,
  V1Probe,
  V1Role,
  V1RoleBinding,
  V1Service,
  V1ServiceAccount,
  V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { httpProbe, restrictedContainerSecurityContext, restrictedPodSecurityContext } from './hardening.js';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  CONFIG_MAP_NAMESPACE,
  DEFAULT_PULL_SECRET_NAME,
} from '../api/webhook-config.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../webhook/managed-labels.js';
import { MUTATE_PATH, VALIDATE_PATH } from '../webhook/webhook-server.js';

/** Name of every namespaced object of the webhook, and the selector label value of its Pods. */
export const WEBHOOK_NAME = 'rt-bootstrapper-webhook';
/** The Secret holding the webhook's serving certificate (`tls.crt`, `tls.key`). */
export const WEBHOOK_TLS_SECRET = 'rt-bootstrapper-webhook-tls';
/** The name of the webhook inside the MutatingWebhookConfiguration. */
/**
 * Node options of the webhook container. A young generation of at most 4 MB per semi-space
 * keeps the process under 100 MB when Pods arrive by the thousand a second (peak 86 against
 * 110 MB with Node's default of 16 MB), at no measurable cost in throughput: what a request
 * allocates dies young either way (docs/figures.md).
 */
export const WEBHOOK_NODE_OPTIONS = '--max-semi-space-size=4';

export const MUTATING_WEBHOOK_NAME = 'pods.rt-bootstrapper.kyma-project.io';
/** Label selecting the webhook's own Pods (kept out of its own objectSelector). */
export const APP_NAME_LABEL = 'app.kubernetes.io/name';

/** Settings of the rendered runtime manifests. */
export interface WebhookManifestOptions {
  readonly namespace?: string;
  readonly image: string;
  readonly replicas?: number;
  /** PEM of the CA that signed the serving certificate, for `caBundle`. */
  readonly caBundlePem?: string;
  /** Call this URL instead of the in-cluster Service (local landscapes, tests). */
  readonly url?: string;
  readonly failurePolicy?: 'Ignore' | 'Fail';
  readonly pullSecretName?: string;
  readonly configMapName?: string;
  readonly logLevel?: string;
  /** Labels added to every object (for example a version stamp). */
  readonly extraLabels?: Readonly<Record<string, string>>;
  /** The KCP drift listener (`https://host:port`); enables the drift channel when set. */
  readonly driftListenerUrl?: string;
}

/** The Secret with the runtime's drift client certificate (`tls.crt`, `tls.key`, `ca.crt`). */
export const WATCHER_TLS_SECRET = 'rt-bootstrapper-watcher-tls';
/** The validating webhook that reports tampering with our objects. */
export const DRIFT_WEBHOOK_NAME = 'drift.rt-bootstrapper.kyma-project.io';

/** Everything `rtb render webhook` prints, in apply order. */
export interface WebhookManifests {
  readonly namespace: V1Namespace;
  readonly serviceAccount: V1ServiceAccount;
  readonly clusterRole: V1ClusterRole;
  readonly clusterRoleBinding: V1ClusterRoleBinding;
  readonly role: V1Role;
  readonly roleBinding: V1RoleBinding;
  readonly deployment: V1Deployment;
  readonly podDisruptionBudget: V1PodDisruptionBudget;
  readonly service: V1Service;
  readonly mutatingWebhookConfiguration: V1MutatingWebhookConfiguration;
  /** Present when the drift channel is enabled. */
  readonly validatingWebhookConfiguration?: V1ValidatingWebhookConfiguration;
}

/**
 * Renders the webhook's runtime manifests (pure). RBAC is least privilege: Secrets only by the
 * pull Secret's name (list/watch through a name field selector), the ConfigMap only by name,
 * namespaces read-only, and events to report.
 */
export function renderWebhookManifests(o: WebhookManifestOptions): WebhookManifests {
  const namespace = o.namespace ?? CONFIG_MAP_NAMESPACE;
  const pullSecret = o.pullSecretName ?? DEFAULT_PULL_SECRET_NAME;
  const configMap = o.configMapName ?? CONFIG_MAP_NAME;
  const labels = { [APP_NAME_LABEL]: WEBHOOK_NAME, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, ...o.extraLabels };
  const selector = { [APP_NAME_LABEL]: WEBHOOK_NAME };
  const meta = (
    name: string,
    namespaced = true,
  ): { name: string; namespace?: string; labels: Record<string, string> } => ({
    name,
    ...(namespaced ? { namespace } : {}),
    labels: { ...labels },
  });
  const subject = { kind: 'ServiceAccount', name: WEBHOOK_NAME, namespace };

  return {
    namespace: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } },
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(WEBHOOK_NAME) },
    clusterRole: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: meta(WEBHOOK_NAME, false),
      rules: [
        { apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] },
        // create cannot be limited by name (the name is in the body); everything else is.
        { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
        {
          apiGroups: [''],
          resources: ['secrets'],
          resourceNames: [pullSecret],
          verbs: ['get', 'list', 'watch', 'update', 'patch', 'delete'],
        },
        { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      ],
    },
    clusterRoleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: meta(WEBHOOK_NAME, false),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: WEBHOOK_NAME },
      subjects: [subject],
    },
    role: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: meta(WEBHOOK_NAME),
      rules: [
        {
          apiGroups: [''],
          resources: ['configmaps'],
          resourceNames: [configMap],
          verbs: ['get', 'list', 'watch'],
        },
      ],
    },
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(WEBHOOK_NAME),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: WEBHOOK_NAME },
      subjects: [subject],
    },
    deployment: renderDeployment(o, namespace, labels, selector, configMap),
    podDisruptionBudget: {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(WEBHOOK_NAME),
      spec: { minAvailable: 1, selector: { matchLabels: selector } },
    },
    service: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(WEBHOOK_NAME),
      spec: { selector, ports: [{ name: 'https', port: 443, targetPort: 'https', protocol: 'TCP' }] },
    },
    mutatingWebhookConfiguration: renderMutatingWebhookConfiguration(o, namespace, labels),
    ...(o.driftListenerUrl
      ? { validatingWebhookConfiguration: renderDriftWebhookConfiguration(o, namespace, labels) }
      : {}),
  };
}

function renderDeployment(
  o: WebhookManifestOptions,
  namespace: string,
  labels: Record<string, string>,
  selector: Record<string, string>,
  configMap: string,
): V1Deployment {
  const probe = (path: string): V1Probe => httpProbe(path, 'https', 'HTTPS');
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: WEBHOOK_NAME, namespace, labels: { ...labels } },
    spec: {
      replicas: o.replicas ?? 2,
      selector: { matchLabels: selector },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels: { ...labels } },
        spec: {
          serviceAccountName: WEBHOOK_NAME,
          terminationGracePeriodSeconds: 30,
          securityContext: restrictedPodSecurityContext(),
          // Spread the replicas so one node going away leaves the webhook answering.
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'ScheduleAnyway',
              labelSelector: { matchLabels: selector },
            },
          ],
          containers: [
            {
              name: 'webhook',
              image: o.image,
              args: [
                'webhook',
                '--tls-cert=/etc/rt-bootstrapper/tls/tls.crt',
                '--tls-key=/etc/rt-bootstrapper/tls/tls.key',
                '--port=9443',
                `--config-map=${namespace}/${configMap}`,
                `--config-key=${CONFIG_MAP_KEY}`,
                `--log-level=${o.logLevel ?? 'info'}`,
                ...(o.driftListenerUrl
                  ? [
                      `--drift-url=${o.driftListenerUrl}`,
                      '--drift-cert=/etc/rt-bootstrapper/watcher/tls.crt',
                      '--drift-key=/etc/rt-bootstrapper/watcher/tls.key',
                      '--drift-ca=/etc/rt-bootstrapper/watcher/ca.crt',
                    ]
                  : []),
              ],
              env: [{ name: 'NODE_OPTIONS', value: WEBHOOK_NODE_OPTIONS }],
              ports: [{ name: 'https', containerPort: 9443, protocol: 'TCP' }],
              readinessProbe: probe('/readyz'),
              livenessProbe: probe('/healthz'),
              resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '256Mi' } },
              securityContext: restrictedContainerSecurityContext(),
              volumeMounts: [
                { name: 'tls', mountPath: '/etc/rt-bootstrapper/tls', readOnly: true },
                ...(o.driftListenerUrl
                  ? [{ name: 'watcher', mountPath: '/etc/rt-bootstrapper/watcher', readOnly: true }]
                  : []),
              ],
            },
          ],
          volumes: [
            { name: 'tls', secret: { secretName: WEBHOOK_TLS_SECRET } },
            ...(o.driftListenerUrl ? [{ name: 'watcher', secret: { secretName: WATCHER_TLS_SECRET } }] : []),
          ],
        },
      },
    },
  };
}

function renderMutatingWebhookConfiguration(
  o: WebhookManifestOptions,
  namespace: string,
  labels: Record<string, string>,
): V1MutatingWebhookConfiguration {
  const caBundle = o.caBundlePem ? Buffer.from(o.caBundlePem).toString('base64') : undefined;
  const clientConfig = o.url
    ? { url: o.url, ...(caBundle ? { caBundle } : {}) }
    : {
        service: { name: WEBHOOK_NAME, namespace, path: MUTATE_PATH, port: 443 },
        ...(caBundle ? { caBundle } : {}),
      };
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: WEBHOOK_NAME, labels: { ...labels } },
    webhooks: [
      {
        name: MUTATING_WEBHOOK_NAME,
        admissionReviewVersions: ['v1'],
        clientConfig,
        rules: [
          {
            operations: ['CREATE', 'UPDATE'],
            apiGroups: [''],
            apiVersions: ['v1'],
            resources: ['pods'],
            scope: 'Namespaced',
          },
          {
            operations: ['UPDATE'],
            apiGroups: [''],
            apiVersions: ['v1'],
            resources: ['pods/ephemeralcontainers'],
            scope: 'Namespaced',
          },
        ],
        matchPolicy: 'Equivalent',
        sideEffects: 'NoneOnDryRun',
        reinvocationPolicy: 'IfNeeded',
        timeoutSeconds: 5,
        failurePolicy: o.failurePolicy ?? 'Ignore',
        // kube-system stays out, and so do the webhook's own Pods: a webhook that must call
        // itself to start could never come back after all its replicas went down.
        namespaceSelector: {
          matchExpressions: [
            { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] },
          ],
        },
        objectSelector: {
          matchExpressions: [{ key: APP_NAME_LABEL, operator: 'NotIn', values: [WEBHOOK_NAME] }],
        },
      },
    ],
  };
}

function renderDriftWebhookConfiguration(
  o: WebhookManifestOptions,
  namespace: string,
  labels: Record<string, string>,
): V1ValidatingWebhookConfiguration {
  const caBundle = o.caBundlePem ? Buffer.from(o.caBundlePem).toString('base64') : undefined;
  const url = o.url ? o.url.replace(/\/mutate$/, VALIDATE_PATH) : undefined;
  const clientConfig = url
    ? { url, ...(caBundle ? { caBundle } : {}) }
    : {
        service: { name: WEBHOOK_NAME, namespace, path: VALIDATE_PATH, port: 443 },
        ...(caBundle ? { caBundle } : {}),
      };
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: `${WEBHOOK_NAME}-drift`, labels: { ...labels } },
    webhooks: [
      {
        name: DRIFT_WEBHOOK_NAME,
        admissionReviewVersions: ['v1'],
        clientConfig,
        // Only observes: it always allows, never blocks, and writes nothing.
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        timeoutSeconds: 2,
        matchPolicy: 'Equivalent',
        objectSelector: { matchLabels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE } },
        rules: [
          {
            operations: ['UPDATE', 'DELETE'],
            apiGroups: [''],
            apiVersions: ['v1'],
            resources: ['secrets', 'configmaps'],
          },
          {
            operations: ['UPDATE', 'DELETE'],
            apiGroups: ['certificates.k8s.io'],
            apiVersions: ['*'],
            resources: ['clustertrustbundles'],
          },
        ],
      },
    ],
  };
}

/** The manifests as a list in apply order (the webhook configuration last, once its backend exists). */
export function webhookManifestList(m: WebhookManifests): readonly object[] {
  return [
    m.namespace,
    m.serviceAccount,
    m.clusterRole,
    m.clusterRoleBinding,
    m.role,
    m.roleBinding,
    m.service,
    m.deployment,
    m.podDisruptionBudget,
    m.mutatingWebhookConfiguration,
    ...(m.validatingWebhookConfiguration ? [m.validatingWebhookConfiguration] : []),
  ];
}
