/**
 * KIM's `Runtime` custom resource (`infrastructuremanager.kyma-project.io/v1`): the names
 * and the subset of its shape this project reads, and the interim signal KIM consumes.
 * The CRD we ship for local clusters and tests is `config/crd/runtime.yaml`.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';

/** API group of KIM's Runtime. */
export const RUNTIME_GROUP = 'infrastructuremanager.kyma-project.io';
/** API version of KIM's Runtime. */
export const RUNTIME_VERSION = 'v1';
/** `apiVersion` of a Runtime. */
export const RUNTIME_API_VERSION = `${RUNTIME_GROUP}/${RUNTIME_VERSION}`;
/** Kind of a Runtime. */
export const RUNTIME_KIND = 'Runtime';
/** Plural resource name of Runtimes. */
export const RUNTIME_PLURAL = 'runtimes';
/** The namespace KIM keeps its Runtimes in. */
export const RUNTIME_NAMESPACE = 'kcp-system';
/** Label holding the runtime ID on a Runtime (and on its kubeconfig Secret). */
export const RUNTIME_ID_LABEL = 'kyma-project.io/runtime-id';

/**
 * The interim signal: KIM's RuntimeController enters its patch state when a Runtime carries this
 * annotation with value `"true"`, and removes it after the patch attempt. The seed calls it a
 * label; `--signal=label` writes a label of the same key instead.
 */
export const FORCE_PATCH_RECONCILIATION = 'operator.kyma-project.io/force-patch-reconciliation';

/** `status.state` values of a Runtime (KIM's enum). */
export const RUNTIME_STATES = ['Pending', 'Ready', 'Terminating', 'Failed'] as const;
/** One of {@link RUNTIME_STATES}. */
export type RuntimeState = (typeof RUNTIME_STATES)[number];

/** A `metav1.Condition` as KIM writes them into `status.conditions`. */
export interface RuntimeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** `spec.shoot`: the fields KIM requires; everything else is kept as it is. */
export interface RuntimeShoot {
  name: string;
  purpose: string;
  platformRegion: string;
  region: string;
  secretBindingName: string;
  provider: { type: string; workers: unknown[]; [field: string]: unknown };
  networking: { pods: string; nodes: string; services: string; type?: string };
  [field: string]: unknown;
}

/** A Runtime as this project reads it (unknown fields are preserved by the CRD, not modelled). */
export interface Runtime {
  apiVersion?: string;
  kind?: string;
  metadata?: V1ObjectMeta;
  spec?: { shoot?: RuntimeShoot; [field: string]: unknown };
  status?: { state?: RuntimeState; conditions?: RuntimeCondition[]; [field: string]: unknown };
}
