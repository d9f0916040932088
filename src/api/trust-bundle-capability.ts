/**
 * Whether a runtime can take the trust-bundle mount (docs/trust-bundle-api.md): it must serve a
 * ClusterTrustBundle API, and its API server must keep a Pod's projected `clusterTrustBundle`
 * source. Where the `ClusterTrustBundleProjection` gate is off the API server drops the source
 * and stores the Pod with an empty projected volume, which the kubelet mounts over
 * `/etc/ssl/certs`, hiding the image's own CA certificates. The webhook finds this out
 * (../webhook/trust-capability/), reports it in its status ConfigMap for the KCP, and mounts
 * nothing where it would do harm. Names and the decision (pure) both sides share.
 */

/** What the API server does with a projected `clusterTrustBundle` source, as a dry-run showed. */
export type ProjectionFinding = 'kept' | 'dropped' | 'unknown';

/** The API version a runtime serves ClusterTrustBundle at, `none`, or `unknown` (discovery failed). */
export type TrustBundleApiFinding = string;

/** `none`: the runtime serves no ClusterTrustBundle version we speak. */
export const API_NOT_SERVED = 'none';
/** `unknown`: discovery failed. */
export const API_UNKNOWN = 'unknown';

/** What the webhook found out about its runtime. */
export interface TrustBundleCapability {
  /** `certificates.k8s.io/v1`, `certificates.k8s.io/v1beta1`, {@link API_NOT_SERVED} or {@link API_UNKNOWN}. */
  readonly api: TrustBundleApiFinding;
  readonly projection: ProjectionFinding;
  /** One line: what discovery found where none is served, or why the probe failed. */
  readonly detail?: string;
  /**
   * Every ClusterTrustBundle version served that a kubelet may read at, e.g. `['v1', 'v1beta1']`
   * on a 1.37 that still serves v1beta1 (absent: the version of {@link api} alone).
   */
  readonly servedVersions?: readonly string[];
  /**
   * Node pools whose kubelets read none of the served versions, in one line (./kubelet-skew.ts);
   * absent when every node can (or the nodes are not known).
   */
  readonly kubelets?: string;
}

/** Why the trust bundle was not mounted, the label of `rtb_webhook_trust_bundle_skipped_total`. */
export type TrustBundleSkipReason = 'api_not_served' | 'projection_dropped' | 'kubelet_too_old';

/** Whether the trust-bundle feature mounts, and if not, why (for the response's warnings). */
export type TrustBundleMount =
  | { readonly mount: true }
  | { readonly mount: false; readonly reason: TrustBundleSkipReason; readonly warning: string };

/** Mount (the finding is not known, or says nothing against it). */
export const MOUNT: TrustBundleMount = { mount: true };

const SKIP_API: TrustBundleMount = {
  mount: false,
  reason: 'api_not_served',
  warning:
    'rt-bootstrapper: trust bundle not mounted: this cluster serves no ClusterTrustBundle API (certificates.k8s.io v1 or v1beta1)',
};

const SKIP_PROJECTION: TrustBundleMount = {
  mount: false,
  reason: 'projection_dropped',
  warning:
    "rt-bootstrapper: trust bundle not mounted: this cluster's API server drops projected clusterTrustBundle volume sources (feature gate ClusterTrustBundleProjection off), and an empty volume would hide the image's CA certificates",
};

/** What kubectl shows of a warning in full: a longer one is cut there. */
const WARNING_MAX_CHARS = 256;

/**
 * The warning where some nodes' kubelets cannot read the served version (`kubelets`: who; the
 * report and the RuntimeBootstrapper name them all).
 */
export function kubeletSkipWarning(kubelets: string): string {
  const text = `rt-bootstrapper: trust bundle not mounted: ${kubelets}`;
  return text.length <= WARNING_MAX_CHARS ? text : `${text.slice(0, WARNING_MAX_CHARS - 1)}…`;
}

/**
 * The mount decision from a finding (pure). Only a finding that says the mount would do harm
 * turns it off: no API served, the projection dropped, or nodes whose kubelets cannot read the
 * version served (a Pod is admitted before it is scheduled: any such node rules the mount out).
 * Not probed yet, or a probe that failed (a policy refusing the probe Pod, say) changes nothing:
 * the webhook mounts as it always did.
 */
export function trustBundleMount(capability: TrustBundleCapability | undefined): TrustBundleMount {
  if (capability === undefined) return MOUNT;
  if (capability.api === API_NOT_SERVED) return SKIP_API;
  if (capability.projection === 'dropped') return SKIP_PROJECTION;
  if (capability.kubelets !== undefined)
    return { mount: false, reason: 'kubelet_too_old', warning: kubeletSkipWarning(capability.kubelets) };
  return MOUNT;
}

/** Whether two findings are the same (a report is written only when it changes). */
export function sameCapability(
  a: TrustBundleCapability | undefined,
  b: TrustBundleCapability | undefined,
): boolean {
  return (
    a?.api === b?.api &&
    a?.projection === b?.projection &&
    a?.detail === b?.detail &&
    a?.kubelets === b?.kubelets &&
    a?.servedVersions?.join(',') === b?.servedVersions?.join(',')
  );
}
