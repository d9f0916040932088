/**
 * The trust-bundle stamp (DESIGN.md §3, §9): what the webhook writes on every Pod that gets the
 * trust-bundle mount, and what the restarter reads back. Pure: names, the hash, the time of the
 * bundle's last content change.
 */
import { createHash } from 'node:crypto';

/**
 * SHA-256 hex of the ClusterTrustBundle's `.spec.trustBundle`, on the Pod (upstream's name and
 * value, so Pods stamped by an upstream install are understood) and, on a restart, on the owner's
 * Pod template.
 */
export const CTB_HASH_ANNOTATION = 'rt-bootstrapper.kyma-project.io/ctb-hash';

/**
 * Ours: on every Pod that carries our trust-bundle mount, stamped or not, so the restarter lists
 * exactly those Pods with a label selector (its memory never grows with the cluster's other
 * Pods). A hash does not fit a label value (63 characters), so the label only says "mounted".
 */
export const CTB_MOUNTED_LABEL = 'rt-bootstrapper.kyma-project.io/ctb-mounted';
/** The value of {@link CTB_MOUNTED_LABEL}. */
export const CTB_MOUNTED_VALUE = 'true';

/**
 * `"false"` on a Pod template (so on its Pods) or on its owner: keep the mount, never restart
 * (programs that reload the file themselves).
 */
export const RESTART_OPT_OUT_ANNOTATION = 'rt-bootstrapper.kyma-project.io/restart-on-trust-change';

/** The field manager of the restarter's one write to an owner: the Pod template's hash annotation. */
export const RESTARTER_FIELD_MANAGER = 'rt-bootstrapper-trust-restarter';

/** The Lease electing the one active restarter among the webhook's replicas. */
export const RESTARTER_LEASE = 'rt-bootstrapper-trust-restarter';

/**
 * On the webhook Deployment (which the KCP reads in every direct-mode pass anyway): how many
 * Pods still run an old bundle, as JSON {@link TrustRestartStatus}.
 */
export const TRUST_STATUS_ANNOTATION = 'rt-bootstrapper.kyma-project.io/trust-restart-status';

/** What the restarter reports on the runtime for the KCP. */
export interface TrustRestartStatus {
  /** The first 12 hex digits of the bundle hash in force. */
  readonly bundle: string;
  /** Pods carrying the mount that still run an older bundle, opted-out ones not included. */
  readonly stalePods: number;
  /** Of {@link stalePods}, those without an owner: never restarted (their creator replaces them). */
  readonly barePods?: number;
  /** Pods on an older bundle that opted out of restarts (they reload the file themselves). */
  readonly optedOutPods?: number;
  /** When this was counted (RFC 3339). */
  readonly at: string;
}

// A safe integer: the CRD's integers are 64-bit, and a larger one (1e20 is an integer to JS) would
// make every status write of the runtime fail.
const count = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** The most characters of the annotation read (the restarter's is under 150): bounded before parsing. */
export const TRUST_STATUS_MAX_CHARS = 1024;

/**
 * The status the restarter wrote on the webhook Deployment (its annotations), or undefined when
 * there is none or it does not parse (a value from a newer or older release is never an error).
 */
export function readTrustStatus(
  annotations: Readonly<Record<string, string>> | undefined,
): TrustRestartStatus | undefined {
  const text = annotations?.[TRUST_STATUS_ANNOTATION];
  if (text === undefined || text.length > TRUST_STATUS_MAX_CHARS) return undefined;
  try {
    const v = JSON.parse(text) as Partial<Record<keyof TrustRestartStatus, unknown>> | null;
    if (typeof v?.bundle !== 'string' || typeof v.at !== 'string' || !count(v.stalePods)) return undefined;
    return {
      bundle: v.bundle,
      stalePods: v.stalePods,
      // Optional: a release that does not write them is still read.
      barePods: count(v.barePods) ? v.barePods : undefined,
      optedOutPods: count(v.optedOutPods) ? v.optedOutPods : undefined,
      at: v.at,
    };
  } catch {
    return undefined;
  }
}

/** The stamp of a bundle text. */
export function trustBundleHash(trustBundle: string): string {
  return createHash('sha256').update(trustBundle).digest('hex');
}

/** A ClusterTrustBundle as far as the stamp needs it. */
export interface TrustBundleObject {
  readonly metadata?: {
    readonly creationTimestamp?: string | Date;
    readonly managedFields?: readonly {
      readonly time?: string | Date;
      readonly fieldsV1?: unknown;
    }[];
  };
  readonly spec?: { readonly trustBundle?: string };
}

const millis = (t: string | Date | undefined): number =>
  t === undefined ? Number.NaN : new Date(t).getTime();

function touchesTrustBundle(fields: unknown): boolean {
  if (typeof fields !== 'object' || fields === null) return false;
  const spec = (fields as Record<string, unknown>)['f:spec'];
  return typeof spec === 'object' && spec !== null && 'f:trustBundle' in spec;
}

/**
 * When the bundle's content last changed, in epoch ms, by the API server's clock: the latest
 * `managedFields` time of an entry owning `spec.trustBundle` (every write of the content records
 * its writer there), else the creation time; NaN when neither is known.
 */
export function trustBundleChangedAt(ctb: TrustBundleObject): number {
  const times = (ctb.metadata?.managedFields ?? [])
    .filter((e) => touchesTrustBundle(e.fieldsV1))
    .map((e) => millis(e.time))
    .filter((t) => !Number.isNaN(t));
  return times.length > 0 ? Math.max(...times) : millis(ctb.metadata?.creationTimestamp);
}
