import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Deployment,
  V1PolicyRule,
  V1Probe,
  V1Role,
  V1RoleBinding,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import { renderControllerFlowControl, type ControllerFlowControl } from './controller-flow-control.js';
import {
  httpProbe,
  restrictedContainerSecurityContext,
  restrictedPodSecurityContext,
  spreadOverNodes,
} from './hardening.js';
import { RUNTIME_GROUP, RUNTIME_NAMESPACE, RUNTIME_PLURAL } from '../api/runtime.js';
import { CONFIG_MAP_NAME } from '../api/webhook-features.js';
import {
  CONTROLLER_GRACE_SECONDS,
  CONTROLLER_LEASE_NAME,
  DEFAULT_STATE_CONFIG_MAP,
  revisionSecretNames,
} from '../api/kcp-objects.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';

/** Name of the controller's ServiceAccount, RBAC objects and Deployment. */
export const CONTROLLER_NAME = 'rt-bootstrapper-controller';
/** The controller's plain-HTTP port for /healthz, /readyz and /metrics. */
export const CONTROLLER_METRICS_PORT = 8080;
/** The controller container's memory limit (the memory alert warns near it). */
export const CONTROLLER_MEMORY_LIMIT = '512Mi';

/** Settings that do not go together. */
export class ControllerManifestError extends Error {
  override readonly name = 'ControllerManifestError';
}

/** Settings of the rendered KCP manifests. */
export interface ControllerManifestOptions {
  readonly image: string;
  readonly namespace?: string;
  readonly replicas?: number;
  readonly mode?: 'annotate' | 'direct';
  /**
   * Direct mode only: every replica works its share of the runtimes (`rtb controller --sharding`,
   * a Lease of its own per replica) instead of one leading and the others standing by.
   */
  readonly sharding?: boolean;
  readonly pullSecretName: string;
  readonly clusterTrustBundleName?: string;
  readonly configMapName?: string;
  /** Annotate mode: KIM's manifests ConfigMap, watched (read by name) when set. */
  readonly manifestsConfigMapName?: string;
  readonly stateConfigMapName?: string;
  readonly leaseName?: string;
  readonly runtimeSelector?: string;
  readonly signal?: 'annotation' | 'label';
  readonly coalesce?: string;
  readonly logLevel?: string;
  /** Direct mode only: `--per-runtime-metrics` (metrics labelled with the runtime ID; docs/monitoring.md). */
  readonly perRuntimeMetrics?: boolean;
  /** Further namespaced rules (a mode that needs more, e.g. direct mode's own resources). */
  readonly extraRules?: readonly V1PolicyRule[];
  /** Labels added to every object. */
  readonly extraLabels?: Readonly<Record<string, string>>;
}

/** Everything `rtb render controller` prints, in apply order. */
export interface ControllerManifests {
  readonly serviceAccount: V1ServiceAccount;
  readonly role: V1Role;
  readonly roleBinding: V1RoleBinding;
  /** Only when a ClusterTrustBundle is watched (it is cluster-scoped). */
  readonly clusterRole?: V1ClusterRole;
  readonly clusterRoleBinding?: V1ClusterRoleBinding;
  /** The controller's own share of the KCP's API Priority and Fairness (cluster-scoped). */
  readonly flowControl: ControllerFlowControl;
  readonly deployment: V1Deployment;
}

/**
 * Renders the controller's KCP manifests (pure). RBAC is least privilege: the sources read-only
 * and by name (list/watch work through the name field selector the controller uses), the Lease
 * and the state ConfigMap writable by name only (create cannot be limited by name), Runtimes
 * readable and patchable (the signal), and Events.
 */
export function renderControllerManifests(o: ControllerManifestOptions): ControllerManifests {
  if (o.sharding === true && o.mode !== 'direct')
    throw new ControllerManifestError('sharding is a direct-mode setting (--mode direct)');
  if (o.perRuntimeMetrics === true && o.mode !== 'direct')
    throw new ControllerManifestError('per-runtime metrics are a direct-mode setting (--mode direct)');
  const namespace = o.namespace ?? RUNTIME_NAMESPACE;
  const configMap = o.configMapName ?? CONFIG_MAP_NAME;
  const stateConfigMap = o.stateConfigMapName ?? DEFAULT_STATE_CONFIG_MAP;
  const lease = o.leaseName ?? CONTROLLER_LEASE_NAME;
  const labels = {
    'app.kubernetes.io/name': CONTROLLER_NAME,
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
    ...o.extraLabels,
  };
  const selector = { 'app.kubernetes.io/name': CONTROLLER_NAME };
  const meta = (namespaced = true): { name: string; namespace?: string; labels: Record<string, string> } => ({
    name: CONTROLLER_NAME,
    namespace: namespaced ? namespace : undefined,
    labels: { ...labels },
  });
  const subject = { kind: 'ServiceAccount', name: CONTROLLER_NAME, namespace };
  // A fresh array per rule: a shared one would print as a YAML anchor and alias.
  const read = (): string[] => ['get', 'list', 'watch'];
  const rules: V1PolicyRule[] = [
    { apiGroups: [''], resources: ['secrets'], resourceNames: [o.pullSecretName], verbs: read() },
    {
      apiGroups: [''],
      resources: ['configmaps'],
      resourceNames: [configMap, ...watchedManifests(o)],
      verbs: read(),
    },
    { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
    {
      apiGroups: [''],
      resources: ['configmaps'],
      resourceNames: [stateConfigMap],
      verbs: ['get', 'update', 'patch'],
    },
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
    {
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      resourceNames: [lease],
      verbs: ['get', 'update', 'patch'],
    },
    { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  ];
  if (o.sharding === true) {
    // Shard Leases are named after each replica's identity, so they cannot be listed by name:
    // replicas watch them by label, renew their own and delete those of replicas long gone.
    rules.push({
      apiGroups: ['coordination.k8s.io'],
      resources: ['leases'],
      verbs: ['get', 'list', 'watch', 'update', 'patch', 'delete'],
    });
  }
  if ((o.mode ?? 'annotate') === 'annotate') {
    rules.push({ apiGroups: [RUNTIME_GROUP], resources: [RUNTIME_PLURAL], verbs: [...read(), 'patch'] });
  } else {
    // Direct mode: its own CRs (with status and finalizers), KIM's kubeconfig Secrets (listed by
    // label, so not limited by name), its CA Secret by name, and Runtimes for --auto-create.
    rules.push(
      {
        apiGroups: ['rt-bootstrapper.kyma-project.io'],
        resources: ['runtimebootstrappers'],
        verbs: [...read(), 'create', 'delete', 'patch', 'update'],
      },
      {
        apiGroups: ['rt-bootstrapper.kyma-project.io'],
        resources: ['runtimebootstrappers/status', 'runtimebootstrappers/finalizers'],
        verbs: ['get', 'patch', 'update'],
      },
      { apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] },
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: ['rt-bootstrapper-ca'],
        verbs: ['get', 'update', 'patch'],
      },
      // The rollout's past revisions: a fixed ring of Secrets, created and rewritten by name.
      { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: revisionSecretNames(),
        verbs: ['get', 'update'],
      },
      { apiGroups: [RUNTIME_GROUP], resources: [RUNTIME_PLURAL], verbs: read() },
    );
  }
  if (o.extraRules) rules.push(...o.extraRules);

  const ctb = o.clusterTrustBundleName;
  const clusterRules: V1PolicyRule[] = [];
  if (ctb !== undefined) {
    clusterRules.push({
      apiGroups: ['certificates.k8s.io'],
      resources: ['clustertrustbundles'],
      resourceNames: [ctb],
      verbs: read(),
    });
  }
  // Direct mode: the cluster-scoped RolloutPolicy, whose status holds the rollout.
  if (o.mode === 'direct') {
    clusterRules.push(
      { apiGroups: ['rt-bootstrapper.kyma-project.io'], resources: ['rolloutpolicies'], verbs: read() },
      // People's approvals, rejections, pauses and resumes: read only (they are theirs).
      { apiGroups: ['rt-bootstrapper.kyma-project.io'], resources: ['rolloutdecisions'], verbs: read() },
      // Events about the cluster-scoped policy: the API server takes them only in `default`.
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      {
        apiGroups: ['rt-bootstrapper.kyma-project.io'],
        resources: ['rolloutpolicies/status'],
        verbs: ['get', 'patch', 'update'],
      },
    );
  }
  const clusterScoped = clusterRules.length > 0;
  return {
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta() },
    role: { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: meta(), rules },
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: meta(),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: CONTROLLER_NAME },
      subjects: [subject],
    },
    clusterRole: clusterScoped
      ? {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRole',
          metadata: meta(false),
          rules: clusterRules,
        }
      : undefined,
    clusterRoleBinding: clusterScoped
      ? {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: meta(false),
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: CONTROLLER_NAME },
          subjects: [subject],
        }
      : undefined,
    flowControl: renderControllerFlowControl({
      name: CONTROLLER_NAME,
      serviceAccount: { name: CONTROLLER_NAME, namespace },
      labels,
    }),
    deployment: renderDeployment(o, namespace, labels, selector, { configMap, stateConfigMap, lease }),
  };
}

/** KIM's manifests ConfigMap when the controller watches it: set, and annotate mode (its only user). */
function watchedManifests(o: ControllerManifestOptions): string[] {
  return o.manifestsConfigMapName !== undefined && (o.mode ?? 'annotate') === 'annotate'
    ? [o.manifestsConfigMapName]
    : [];
}

/** The controller's container arguments (the flags of `rtb controller`). */
export function controllerArgs(
  o: ControllerManifestOptions,
  namespace: string,
  names: { configMap: string; stateConfigMap: string; lease: string },
): string[] {
  return [
    'controller',
    `--mode=${o.mode ?? 'annotate'}`,
    `--namespace=${namespace}`,
    `--pull-secret=${o.pullSecretName}`,
    ...(o.clusterTrustBundleName !== undefined ? [`--cluster-trust-bundle=${o.clusterTrustBundleName}`] : []),
    `--config-map=${names.configMap}`,
    ...watchedManifests(o).map((name) => `--manifests-config-map=${name}`),
    `--state-config-map=${names.stateConfigMap}`,
    ...(o.runtimeSelector !== undefined ? [`--runtime-selector=${o.runtimeSelector}`] : []),
    `--signal=${o.signal ?? 'annotation'}`,
    `--coalesce=${o.coalesce ?? '2s'}`,
    `--metrics-port=${CONTROLLER_METRICS_PORT}`,
    ...(o.sharding === true ? ['--sharding'] : ['--leader-elect', `--leader-election-id=${names.lease}`]),
    `--log-level=${o.logLevel ?? 'info'}`,
    // The image activates the FIPS provider (docs/fips.md); the process refuses to start without it.
    '--fips',
    ...(o.perRuntimeMetrics === true ? ['--per-runtime-metrics'] : []),
  ];
}

function renderDeployment(
  o: ControllerManifestOptions,
  namespace: string,
  labels: Record<string, string>,
  selector: Record<string, string>,
  names: { configMap: string; stateConfigMap: string; lease: string },
): V1Deployment {
  const probe = (path: string): V1Probe => httpProbe(path, 'http-metrics');
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: CONTROLLER_NAME, namespace, labels: { ...labels } },
    spec: {
      replicas: o.replicas ?? 2,
      selector: { matchLabels: selector },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: {
          labels: { ...labels },
          annotations: {
            'prometheus.io/scrape': 'true',
            'prometheus.io/port': String(CONTROLLER_METRICS_PORT),
          },
        },
        spec: {
          serviceAccountName: CONTROLLER_NAME,
          // SIGTERM stops the mode and releases the Lease, so the standby (sharded: the other
          // replicas) takes over at once.
          terminationGracePeriodSeconds: CONTROLLER_GRACE_SECONDS,
          securityContext: restrictedPodSecurityContext(),
          topologySpreadConstraints: spreadOverNodes(selector),
          containers: [
            {
              name: 'controller',
              image: o.image,
              args: controllerArgs(o, namespace, names),
              env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
              ports: [{ name: 'http-metrics', containerPort: CONTROLLER_METRICS_PORT, protocol: 'TCP' }],
              readinessProbe: probe('/readyz'),
              livenessProbe: probe('/healthz'),
              resources: {
                requests: { cpu: '50m', memory: '128Mi' },
                limits: { memory: CONTROLLER_MEMORY_LIMIT },
              },
              securityContext: restrictedContainerSecurityContext(),
            },
          ],
        },
      },
    },
  };
}

/** The manifests as a list in apply order (RBAC before the Deployment that needs it). */
export function controllerManifestList(m: ControllerManifests): readonly object[] {
  return [
    m.serviceAccount,
    m.role,
    m.roleBinding,
    ...(m.clusterRole ? [m.clusterRole] : []),
    ...(m.clusterRoleBinding ? [m.clusterRoleBinding] : []),
    m.flowControl.priorityLevel,
    m.flowControl.flowSchema,
    m.deployment,
  ];
}
