/**
 * The escaped-Pod decision (pure, DESIGN §13): whether a running Pod follows the set in force, and
 * if not, why. The mutation's own pipeline (../../mutation/pipeline.ts) decides: the Pod as it
 * runs is given to it as a CREATE, and what it would change is what the Pod lacks. So the scope is
 * exactly the webhook's (the config's namespace selection, the Namespace's and the Pod's
 * annotations, per-Pod opt-outs) and re-invocation changes nothing on a Pod we admitted.
 */
import { ANNOTATION_DEFAULTED, ANNOTATION_MODIFIED } from '../../api/webhook-features.js';
import {
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_SET_FIPS_MODE,
  FEATURE_SET_LANDSCAPE,
} from '../../api/webhook-features.js';
import type { EscapeReason } from '../../api/escaped-pods.js';
import type { TrustBundleMount } from '../../api/trust-bundle-capability.js';
import type { WebhookConfig } from '../../api/webhook-config.js';
import { CTB_HASH_ANNOTATION } from '../../api/trust-stamp.js';
import { APP_NAME, APP_NAME_LABEL, REGISTRATION_EXCLUDED_NAMESPACES } from '../../api/runtime-names.js';
import { mutatePod } from '../../mutation/pipeline.js';
import type { Pod } from '../../mutation/pod.js';
import { asJsonObject } from '../../api/json-object.js';
import { PodTooLargeError } from '../../mutation/pod-size.js';

/** What the decision needs besides the Pod. */
export interface EscapeContext {
  /** The config as it applies on the runtime (../../mutation/pipeline.ts `configOnRuntime`). */
  readonly config: WebhookConfig;
  /** The annotations of the Pod's Namespace (undefined: none, or the Namespace is not known). */
  readonly namespaceAnnotations?: Readonly<Record<string, string>> | undefined;
  /** Whether the runtime takes the trust-bundle mount (absent: it does). */
  readonly trustBundleMount?: TrustBundleMount | undefined;
  /** The set version in force (undefined where the config is no set of the KCP's). */
  readonly revision?: string | undefined;
}

/**
 * Whether the Pod counts at all: it runs (phase Running), is not being deleted, and the webhook's
 * registration covers it (not in {@link REGISTRATION_EXCLUDED_NAMESPACES}, not one of the
 * webhook's own Pods: labelled ours in `webhookNamespace`, as the registration's matchCondition
 * reads it; the label elsewhere is a tenant's, and its Pod counts). Pending Pods are left out:
 * one admitted a moment ago may still be starting.
 */
export function isCounted(pod: Pod, webhookNamespace: string): boolean {
  if (pod.status?.phase !== 'Running' || pod.metadata?.deletionTimestamp !== undefined) return false;
  const namespace = pod.metadata?.namespace ?? '';
  if (REGISTRATION_EXCLUDED_NAMESPACES.includes(namespace)) return false;
  if (namespace !== webhookNamespace) return true;
  // JSON may carry `labels: null`: no labels.
  return asJsonObject(pod.metadata?.labels)?.[APP_NAME_LABEL] !== APP_NAME;
}

// JSON Pointer paths of what the trust-bundle feature adds (volume, mounts); its stamp and label
// are metadata, which a restart's Pod gets anyway.
const isMountPath = (path: string): boolean =>
  path.startsWith('/spec/volumes') || /^\/spec\/(?:containers|initContainers)\/\d+\/volumeMounts/.test(path);

const isSpecPath = (path: string): boolean => path === '/spec' || path.startsWith('/spec/');

/**
 * The reasons the Pod does not follow the set in force, in {@link ESCAPE_REASONS} order; empty
 * when it follows it (or is out of scope, or is too large for the webhook to mutate at all). Only
 * what the spec lacks counts: the marks, the revision stamp and the trust-bundle stamp are
 * metadata, which a Pod admitted under an earlier set legitimately carries differently.
 */
export function escapeReasons(pod: Pod, c: EscapeContext): EscapeReason[] {
  let result;
  try {
    result = mutatePod({
      pod,
      operation: 'CREATE',
      namespace: { name: pod.metadata?.namespace ?? '', annotations: c.namespaceAnnotations },
      config: c.config,
      // The webhook makes the Secret exist before a Pod is stored: a restarted Pod gets the reference.
      pullSecretAvailable: true,
      // The Pod's own stamp: a bundle rotation is the trust restarter's, not an escape.
      trustBundleHash: pod.metadata?.annotations?.[CTB_HASH_ANNOTATION],
      trustBundleMount: c.trustBundleMount,
      revision: c.revision,
    });
  } catch (err) {
    if (err instanceof PodTooLargeError) return [];
    throw err;
  }
  const specOps = result.patch.filter((op) => isSpecPath(op.path));
  if (specOps.length === 0) return [];
  const reasons: EscapeReason[] = [];
  const annotations = asJsonObject(pod.metadata?.annotations);
  const marked =
    annotations?.[ANNOTATION_MODIFIED] === 'true' || annotations?.[ANNOTATION_DEFAULTED] === 'true';
  if (!marked) reasons.push('unstamped');
  if (result.applied.includes(FEATURE_ALTER_IMG_REGISTRY)) reasons.push('registry');
  if (result.applied.includes(FEATURE_ADD_IMG_PULL_SECRET)) reasons.push('pull-secret');
  if (specOps.some((op) => isMountPath(op.path))) reasons.push('trust-bundle');
  if (result.applied.includes(FEATURE_SET_FIPS_MODE) || result.applied.includes(FEATURE_SET_LANDSCAPE))
    reasons.push('env');
  return reasons;
}
