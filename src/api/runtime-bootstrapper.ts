import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { EscapeReason } from './escaped-pods.js';
import type { PreflightReport, RevisionHealth } from './workload-health.js';

/** API group of our CRD. */
export const RTB_GROUP = 'rt-bootstrapper.kyma-project.io';
/** API version of our CRD. */
export const RTB_VERSION = 'v1alpha1';
/** `apiVersion` of a RuntimeBootstrapper. */
export const RTB_API_VERSION = `${RTB_GROUP}/${RTB_VERSION}`;
/** Plural resource name. */
export const RTB_PLURAL = 'runtimebootstrappers';
/** Finalizer that keeps a RuntimeBootstrapper until the runtime is cleaned up. */
export const RTB_FINALIZER = 'rt-bootstrapper.kyma-project.io/cleanup';
/** Annotation an operator sets (value "true") to release the finalizer of an unreachable runtime. */
export const FORCE_RELEASE_ANNOTATION = 'rt-bootstrapper.kyma-project.io/force-release';
/** The set version a preflight candidate Secret is for (the set's own objects carry content versions: ./set-version.ts). */
export const SET_VERSION_ANNOTATION = 'rt-bootstrapper.kyma-project.io/set-version';
/** Label on RuntimeBootstrappers created for a Runtime CR (auto-create mode). */
export const RUNTIME_ID_LABEL = 'kyma-project.io/runtime-id';

/** Lifecycle states shown in `status.state`. */
export type BootstrapperState = 'Pending' | 'Installing' | 'Ready' | 'Error' | 'Deleting' | 'Paused';

/** Condition types of a RuntimeBootstrapper. */
export type ConditionType =
  | 'RuntimeReachable'
  | 'Installed'
  | 'ConfigurationSynced'
  | 'WebhookReady'
  /**
   * The serving Secret and the caBundle follow the protocol (docs/serving-certificate.md): reason
   * `Current`, or `Rotating` while a step waits (its message says for what); False when a step failed.
   */
  | 'ServingCertificate'
  /** False while another field manager (KIM's `kim-bootstrapper`) still writes our objects on the runtime. */
  | 'ExclusivelyManaged'
  /**
   * Whether the runtime serves a ClusterTrustBundle API version we speak (reason `Served`); False,
   * reason `NotServed`, names what discovery found: the bundle is not written there (the rest of
   * the set is) and the webhook mounts nothing.
   */
  | 'TrustBundleAPI'
  /**
   * Whether the runtime's API server keeps a Pod's projected `clusterTrustBundle` source, as the
   * webhook found out (reason `Kept`); False (`Dropped`, `NotServed`, `KubeletTooOld`: node pools
   * whose kubelets cannot read the version served, named): the webhook mounts nothing there;
   * Unknown (`ProbeFailed`, `NotReported`): it mounts as ever.
   */
  | 'TrustBundleProjection'
  /**
   * Whether our MutatingAdmissionPolicy mutates Pods inside the runtime's API server (reason
   * `Served`); False (`NotServed`: the runtime serves no version we speak; `ConfigNotCarried`: the
   * set's config is more than a policy carries): the webhook alone mutates Pods there.
   */
  | 'AdmissionPolicy'
  /**
   * False (reason `HeldByAnother`) when an older RuntimeBootstrapper names the same runtime ID: this
   * one is not served (nothing on the runtime is touched) until that one is deleted.
   */
  | 'RuntimeID'
  /**
   * False (reason `Shared`) while other RuntimeBootstrappers name the same kubeconfig Secret (a
   * warning: they would manage one cluster twice); True once no other does.
   */
  | 'KubeconfigExclusive'
  /**
   * Whether Pods changed under the set applied fail for a reason the change can cause (DESIGN §11),
   * as the runtime's webhook reports: True (reason `ChangeCausedFailures`, the samples' images and
   * reasons in the message) when any did; False (`NoFailures`, or `NoPods` when no Pod was changed
   * under it); absent while the webhook reports no workloads.
   */
  | 'Degraded'
  /**
   * False when the KCP refused the webhook's status report as it read it (reason `TooLarge`:
   * nothing of it was read; `OutOfBounds`: the keys named were left out); absent otherwise. It
   * marks this runtime alone: the rest of its status is written as ever.
   */
  | 'WebhookReport'
  /**
   * Whether running Pods in the runtime's scope do not follow the set in force (admitted while no
   * webhook answered), as the runtime's webhook counted them: True (reason `Found`, the counts by
   * reason in the message), False (`None`); absent while the webhook reports no count.
   */
  | 'EscapedPods'
  /**
   * Whether hosts the overrides rewrite have a customer's registry cache on the runtime, as its
   * webhook reports (docs/registry-caches.md): True (reason `Bypassed`: still rewritten, the cache
   * bypassed; `LeftToCache`: config `registryCaches: leave`), the hosts in the message; False
   * (`NotRewritten`, `NoCaches`); absent while the webhook reports none.
   */
  | 'RegistryCache';

/** A status condition (metav1.Condition). */
export interface Condition {
  type: ConditionType;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** `spec` of a RuntimeBootstrapper. */
export interface RuntimeBootstrapperSpec {
  runtimeID: string;
  kubeconfigSecretRef?: { name?: string; namespace?: string; key?: string };
  paused?: boolean;
  /**
   * The runtime agent restarts the owners of escaped Pods through the trust restarter's paced path
   * (`rtb webhook --repair-escaped`, docs/runtime-agent.md); bare Pods are only reported. Default off.
   */
  repairEscapedPods?: boolean;
}

/**
 * What the runtime's trust-bundle restarter last reported (docs/trust-restart.md), as read from
 * its annotation on the webhook Deployment.
 */
export interface TrustRestartSummary {
  /** The first 12 hex digits of the SHA-256 of the bundle in force on the runtime. */
  bundle: string;
  /** Pods still on an older bundle (bare ones included, opted-out ones not). */
  stalePods: number;
  /** Of those, Pods without an owner: never restarted. */
  barePods?: number;
  /** Pods on an older bundle that opted out of restarts (they reload the file themselves). */
  optedOutPods?: number;
  /** When the restarter counted (RFC 3339). */
  reportedAt?: string;
}

/**
 * What the runtime's webhook reports of the Pods it changed under the set applied (DESIGN §11):
 * its per-revision figures, for `revision`, the set version applied.
 */
export type WorkloadsSummary = Omit<RevisionHealth, 'ran'> & {
  /** The set version the figures are for (`appliedVersion` when they were read). */
  revision: string;
  /**
   * Keys of original images whose containers started under other sets on this runtime (a bounded
   * sample, ../controller/direct/workloads-summary.ts): what proves another runtime's failure on
   * the same original a regression (../controller/rollout/regression.ts).
   */
  ranBefore?: string[];
};

/** What the runtime's webhook last counted of the escaped Pods (../api/escaped-pods.ts). */
export interface EscapedPodsSummary {
  /** Running Pods in scope that do not follow the set in force, each once. */
  pods: number;
  /** Of those, per reason (a Pod under each of its reasons). */
  reasons?: Partial<Record<EscapeReason, number>>;
  /** Of those, Pods without an owner: reported, never restarted. */
  bare: number;
  /** Whether the webhook restarts their owners. */
  repair: boolean;
  /** Owners the webhook restarted since its leader started. */
  restarted: number;
  /** The set version they were judged against. */
  revision?: string;
  /** When the webhook counted (RFC 3339). */
  reportedAt?: string;
}

/** `status` of a RuntimeBootstrapper. */
export interface RuntimeBootstrapperStatus {
  state?: BootstrapperState;
  observedGeneration?: number;
  appliedVersion?: string;
  appliedAt?: string;
  webhookVersion?: string;
  /** The set version the runtime's webhook reports it has loaded (read only while a RolloutPolicy exists). */
  servedVersion?: string;
  /** The set version the runtime's webhook refused, when it refused the one applied. */
  refusedVersion?: string;
  /** Why the webhook refused it. */
  refusal?: string;
  /** The RolloutPolicy wave this runtime belongs to. */
  rolloutWave?: string;
  /** How many Pods on the runtime still run an older trust bundle. */
  trustRestart?: TrustRestartSummary;
  /**
   * The ClusterTrustBundle API version the runtime serves and the bundle was last written at
   * (`certificates.k8s.io/v1` or `…/v1beta1`); absent when it serves none (see condition
   * `TrustBundleAPI`) or the set has no bundle.
   */
  clusterTrustBundleAPI?: string;
  /**
   * The MutatingAdmissionPolicy API version the runtime serves and our policy is written at
   * (`admissionregistration.k8s.io/v1` or `…/v1beta1`); absent where it serves none and the webhook
   * alone mutates Pods (condition `AdmissionPolicy`).
   */
  admissionPolicyAPI?: string;
  /**
   * The webhook's figures for the Pods changed under the set applied (zeros: none was); absent
   * while the webhook reports no workloads. Condition `Degraded` says whether any failed.
   */
  workloads?: WorkloadsSummary;
  /** What the runtime's webhook last counted of the escaped Pods; condition `EscapedPods`. */
  escapedPods?: EscapedPodsSummary;
  /** The last preflight the runtime's webhook reports (a candidate set checked before its rollout). */
  preflight?: PreflightReport;
  /**
   * The candidate set version whose preflight Secret the controller left on the runtime (removed,
   * and this cleared, once the rollout no longer asks for it).
   */
  preflightCandidate?: string;
  conditions?: Condition[];
}

/** The custom resource. */
export interface RuntimeBootstrapper {
  apiVersion?: string;
  kind?: string;
  metadata: V1ObjectMeta & { name: string; namespace: string };
  spec: RuntimeBootstrapperSpec;
  status?: RuntimeBootstrapperStatus;
}

/** The kubeconfig Secret of a runtime, defaulted to KIM's convention. */
export function kubeconfigSecretOf(rb: RuntimeBootstrapper): {
  name: string;
  namespace: string;
  key: string;
} {
  const ref = rb.spec.kubeconfigSecretRef ?? {};
  return {
    name: ref.name ?? `kubeconfig-${rb.spec.runtimeID}`,
    namespace: ref.namespace ?? rb.metadata.namespace,
    key: ref.key ?? 'config',
  };
}

/** The API path of the RuntimeBootstrappers in `namespace`. */
export function runtimeBootstrappersPath(namespace: string): string {
  return `/apis/${RTB_GROUP}/${RTB_VERSION}/namespaces/${namespace}/${RTB_PLURAL}`;
}

/** A new RuntimeBootstrapper for runtime `runtimeId`, named after it. */
export function newRuntimeBootstrapper(
  runtimeId: string,
  namespace: string,
  meta: Pick<V1ObjectMeta, 'labels' | 'annotations'> = {},
): RuntimeBootstrapper {
  return {
    apiVersion: RTB_API_VERSION,
    kind: 'RuntimeBootstrapper',
    metadata: { name: runtimeId, namespace, ...meta },
    spec: { runtimeID: runtimeId },
  };
}
