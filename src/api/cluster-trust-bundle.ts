/**
 * A ClusterTrustBundle at any version we speak (`certificates.k8s.io/v1` or `v1beta1`): both have
 * the same fields, so one shape serves every cluster of a fleet (../kube/trust-bundle-api.ts).
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';

/** `spec` of a ClusterTrustBundle (the same at v1 and v1beta1). */
export interface ClusterTrustBundleSpec {
  signerName?: string;
  /** PEM certificates. */
  trustBundle: string;
}

/** A ClusterTrustBundle as read from or written to any cluster. */
export interface ClusterTrustBundle {
  apiVersion?: string;
  kind?: string;
  metadata?: V1ObjectMeta;
  spec: ClusterTrustBundleSpec;
}
