/**
 * The admission policy of a runtime in direct mode (pure; docs/admission-policy.md): where the
 * runtime serves MutatingAdmissionPolicy (`v1`, else `v1beta1`, found by discovery as the
 * ClusterTrustBundle API is), its parameters are part of the set, written and committed with the
 * set's other objects, so no runtime holds the policy's parameters of one set beside another set's
 * config; the policy and its binding (one text for every set) are part of the webhook's objects.
 * Where it serves neither, the webhook alone admits, as before.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import type { Condition } from '../../api/runtime-bootstrapper.js';
import { CONTENT_VERSION_ANNOTATION } from '../../api/set-version.js';
import { trustBundleHash } from '../../api/trust-stamp.js';
import type { ApiChoice } from '../../kube/served-api.js';
import { TRUST_BUNDLE_KIND } from '../../kube/trust-bundle-api.js';
import { AdmissionPolicyConfigError } from '../../render/admission-policy-params.js';
import {
  ADMISSION_POLICY_NAME,
  renderAdmissionPolicy,
  type AdmissionPolicyApiVersion,
  type AdmissionPolicyManifests,
} from '../../render/admission-policy.js';
import type { StatusBuilder } from './status-builder.js';
import type { SyncSet } from './sync-set.js';

/** MutatingAdmissionPolicy as discovery looks for it (shared with the runtime agent). */
export { ADMISSION_POLICY_API } from '../../api/admission-path-report.js';

/** What discovery found on a runtime. */
export type AdmissionPolicyApi = ApiChoice<AdmissionPolicyApiVersion>;

/** The status condition that says which admission path a runtime has. */
export const ADMISSION_POLICY_CONDITION = 'AdmissionPolicy';

/** How a runtime admits Pods, as `rtb status` and the metric name it. */
export type AdmissionPath = 'policy' | 'webhook';

/** The runtime's admission path from its status (pure). */
export function admissionPathOf(status: { readonly admissionPolicyAPI?: string } | undefined): AdmissionPath {
  return status?.admissionPolicyAPI === undefined ? 'webhook' : 'policy';
}

const asObject = (o: object): KubernetesObject => o;

const POLICY_KINDS: ReadonlySet<string | undefined> = new Set([
  'ConfigMap',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
]);

/** One of the policy's three objects (parameters, policy, binding). */
export function isAdmissionPolicyObject(o: KubernetesObject): boolean {
  return o.metadata?.name === ADMISSION_POLICY_NAME && POLICY_KINDS.has(o.kind);
}

/** The policy's objects for one runtime and set. */
export interface PolicyPlan {
  /** Policy, binding and parameters; none where the runtime serves no policy API. */
  readonly manifests: AdmissionPolicyManifests | undefined;
  /**
   * The parameters written with the set: the set's own, or, where the set's config is more than a
   * policy carries, empty ones (the policy then fails on every Pod, and a failure is `Ignore`:
   * the webhook alone admits), so no runtime keeps an earlier set's parameters beside this set.
   */
  readonly params: KubernetesObject | undefined;
  /** Why the set's config is not carried by the policy (the field and reason). */
  readonly refusal: AdmissionPolicyConfigError | undefined;
}

/** The parameters' content version: they are written again only when it changes (./set-writes.ts). */
function versioned(params: Record<string, unknown>): KubernetesObject {
  const version = createHash('sha256')
    .update(JSON.stringify(params.data ?? {}))
    .digest('hex')
    .slice(0, 32);
  const metadata = params.metadata as { annotations?: Record<string, string> };
  return asObject({
    ...params,
    metadata: {
      ...metadata,
      annotations: { ...metadata.annotations, [CONTENT_VERSION_ANNOTATION]: version },
    },
  });
}

/**
 * The policy's objects for the set on a runtime serving `api` (none where it serves none).
 * `mount`: whether the trust bundle is mounted there ({@link mountsTrustBundle}).
 */
export function planAdmissionPolicy(
  set: Pick<SyncSet, 'config' | 'objects' | 'version'>,
  api: AdmissionPolicyApi,
  mount: boolean,
): PolicyPlan {
  if (!api.served) return { manifests: undefined, params: undefined, refusal: undefined };
  const bundle = set.objects.find((o) => o.kind === TRUST_BUNDLE_KIND);
  const pem = (bundle as { spec?: { trustBundle?: string } } | undefined)?.spec?.trustBundle;
  try {
    const manifests = renderAdmissionPolicy(set.config, {
      apiVersion: api.version,
      revision: set.version,
      trustBundleHash: pem === undefined ? undefined : trustBundleHash(pem),
      trustBundleMount: mount,
    });
    return { manifests, params: versioned(manifests.params), refusal: undefined };
  } catch (error) {
    if (!(error instanceof AdmissionPolicyConfigError)) throw error;
    const manifests = renderAdmissionPolicy(
      { ...set.config, overrides: {}, namespaceFeatures: {}, clusterTrustBundle: undefined },
      { apiVersion: api.version },
    );
    return { manifests, params: versioned({ ...manifests.params, data: {} }), refusal: error };
  }
}

/** The set's objects on the runtime with the policy's parameters after them (pure). */
export function withPolicyParams(
  sources: readonly KubernetesObject[],
  params: KubernetesObject | undefined,
): readonly KubernetesObject[] {
  return params === undefined ? sources : [...sources, params];
}

/**
 * The webhook's objects with the policy and its binding just before the Deployment (pure): after
 * the rights they are written with (the webhook's ServiceAccount's, ./runtime-installer.ts), and
 * in force before the webhook's Pods roll.
 */
export function withPolicy(
  webhook: readonly KubernetesObject[],
  manifests: AdmissionPolicyManifests | undefined,
): readonly KubernetesObject[] {
  if (manifests === undefined) return webhook;
  const at = webhook.findIndex((o) => o.kind === 'Deployment');
  const before = at === -1 ? webhook.length : at;
  return [
    ...webhook.slice(0, before),
    asObject(manifests.policy),
    asObject(manifests.binding),
    ...webhook.slice(before),
  ];
}

/**
 * Records the runtime's admission path: `admissionPolicyAPI` (the version the policy is written
 * at) and condition `AdmissionPolicy` (True `Served`, or False `NotServed` with what discovery
 * found: the webhook alone admits there).
 */
export function recordAdmissionPolicy(
  status: StatusBuilder,
  api: AdmissionPolicyApi,
  refusal: AdmissionPolicyConfigError | undefined,
): void {
  if (!api.served) {
    status
      .admissionPolicyApi(undefined)
      .condition(
        ADMISSION_POLICY_CONDITION,
        'False',
        'NotServed',
        `the webhook alone mutates Pods; ${api.found}`,
      );
  } else if (refusal !== undefined) {
    status
      .admissionPolicyApi(undefined)
      .condition(
        ADMISSION_POLICY_CONDITION,
        'False',
        'ConfigNotCarried',
        `the webhook alone mutates Pods: the set's config is more than the policy carries (${refusal.message})`,
      );
  } else {
    status
      .admissionPolicyApi(api.apiVersion)
      .condition(
        ADMISSION_POLICY_CONDITION,
        'True',
        'Served',
        `the policy mutates Pods inside the runtime's API server (${api.apiVersion}); the webhook stays registered`,
      );
  }
}

/**
 * Whether the policy mounts the trust bundle on the runtime: only where its webhook found that the
 * API server keeps the projection (condition `TrustBundleProjection` True). Elsewhere, also while it
 * has not reported, the policy mounts nothing and the webhook, which follows its own finding, adds
 * the mount after it: a Pod never gets a mount its runtime drops.
 */
export function mountsTrustBundle(conditions: readonly Condition[] | undefined): boolean {
  return (conditions ?? []).some((c) => c.type === 'TrustBundleProjection' && c.status === 'True');
}
