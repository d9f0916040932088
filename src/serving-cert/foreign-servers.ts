/**
 * Pods behind the webhook Service that we did not start: an install we take over (upstream's,
 * serving a certificate from its own Secret `rt-bootstrapper-webhook-cert`). While one may
 * serve, the serving-certificate plan keeps every CA the caBundles hold (docs/serving-certificate.md,
 * "Taking over an install"). Ours carry the managed-by label in their template; every release of
 * ours serves from Secret `rt-bootstrapper-webhook-tls`, whose CAs the plan keeps anyway.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { WEBHOOK_SELECTOR } from '../api/runtime-names.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/managed-labels.js';

/**
 * The label selector of Pods that the webhook Service selects and that are not ours (`!=` also
 * matches Pods without the label). The Service's selector is upstream's, which our manifests keep.
 */
export const FOREIGN_SERVER_SELECTOR = [
  ...Object.entries(WEBHOOK_SELECTOR).map(([k, v]) => `${k}=${v}`),
  `${MANAGED_BY_LABEL}!=${MANAGED_BY_VALUE}`,
].join(',');

/**
 * Whether any of these Pods (listed with {@link FOREIGN_SERVER_SELECTOR}) may still serve: every
 * Pod that has not ended. A Pod not ready now may become ready, and a terminating one serves the
 * calls it has until it is gone, so only a finished or deleted Pod is out.
 */
export function foreignServersAmong(pods: readonly V1Pod[]): boolean {
  return pods.some((p) => {
    const phase = p.status?.phase;
    return phase !== 'Succeeded' && phase !== 'Failed';
  });
}
