/**
 * Whether the runtime's API server keeps the trust-bundle projection, in the RuntimeBootstrapper
 * status (condition `TrustBundleProjection`), from what the runtime's webhook found out and wrote
 * in its status ConfigMap (../../api/webhook-status.ts). The report is read on passes that look
 * at everything anyway (forced, or after the webhook's objects were written), once when the
 * status has no condition yet, and every few seconds for a short while after an install while the
 * webhook has not reported: a runtime at rest costs nothing more. Pure.
 */
import type { Condition } from '../../api/runtime-bootstrapper.js';
import { API_NOT_SERVED, type TrustBundleCapability } from '../../api/trust-bundle-capability.js';
import type { StatusBuilder } from './status-builder.js';

/** How long after the webhook was installed a missing report is looked for again. */
export const PROJECTION_REPORT_WINDOW_MS = 2 * 60_000;
/** How often, within that window. */
export const PROJECTION_REPORT_POLL_MS = 10_000;

/** What {@link projectionLookDue} weighs. */
export interface ProjectionLookInput {
  /** The pass ended Ready. */
  readonly ready: boolean;
  /** The set holds a trust bundle (otherwise the projection does not matter). */
  readonly hasBundle: boolean;
  /** A forced pass, or one that wrote the webhook's objects. */
  readonly thorough: boolean;
  /** The condition as the status holds it now. */
  readonly current: Condition | undefined;
  /** When the webhook was installed (the `Installed` condition's transition), epoch ms. */
  readonly installedAtMs: number;
  readonly nowMs: number;
}

/** Whether this pass reads the webhook's report for the projection finding. */
export function projectionLookDue(i: ProjectionLookInput): boolean {
  if (!i.ready || !i.hasBundle) return false;
  if (i.thorough || i.current === undefined) return true;
  return i.current.reason === 'NotReported' && lately(i);
}

/** Whether a pass that found no report yet asks for another look soon. */
export function projectionPollDue(i: ProjectionLookInput, status: StatusBuilder): boolean {
  return status.get('TrustBundleProjection')?.reason === 'NotReported' && lately(i);
}

const lately = (i: ProjectionLookInput): boolean => i.nowMs - i.installedAtMs < PROJECTION_REPORT_WINDOW_MS;

/** The condition for a finding (absent: the webhook has not reported one). */
export function recordProjection(status: StatusBuilder, finding: TrustBundleCapability | undefined): void {
  const detail = finding?.detail ? ` (${finding.detail})` : '';
  if (finding === undefined) {
    status.condition(
      'TrustBundleProjection',
      'Unknown',
      'NotReported',
      'the webhook has not reported whether the API server keeps the trust-bundle projection (its first probe is still to come, or its release does not probe); it mounts the trust bundle',
    );
  } else if (finding.api === API_NOT_SERVED) {
    status.condition(
      'TrustBundleProjection',
      'False',
      'NotServed',
      `the runtime serves no ClusterTrustBundle API: the webhook mounts no trust bundle${detail}`,
    );
  } else if (finding.projection === 'dropped') {
    status.condition(
      'TrustBundleProjection',
      'False',
      'Dropped',
      "the runtime's API server drops projected clusterTrustBundle volume sources (feature gate ClusterTrustBundleProjection off): the webhook mounts no trust bundle, so Pods keep their images' CA certificates; turn the gate on (API server and kubelets) for the mount",
    );
  } else if (finding.kubelets !== undefined) {
    // Nodes whose kubelets cannot read the version served: a Pod with the mount would not start
    // there. False, so the admission policy mounts nothing either (./admission-policy-plan.ts).
    status.condition(
      'TrustBundleProjection',
      'False',
      'KubeletTooOld',
      `the webhook mounts no trust bundle: ${finding.kubelets}; upgrade those node pools, or serve certificates.k8s.io/v1beta1 beside v1, for the mount`,
    );
  } else if (finding.projection === 'kept') {
    status.condition(
      'TrustBundleProjection',
      'True',
      'Kept',
      `the runtime's API server keeps projected clusterTrustBundle volume sources (${finding.api})`,
    );
  } else {
    status.condition(
      'TrustBundleProjection',
      'Unknown',
      'ProbeFailed',
      `the webhook could not find out whether the API server keeps the projection; it mounts the trust bundle${detail}`,
    );
  }
}
