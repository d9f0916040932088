/**
 * The webhook's report of the configuration it serves, a small ConfigMap beside it on the
 * runtime (direct mode only): the KCP controller reads it to gate a rollout on what the webhook
 * really loaded, and on whether it refused the set it was given; and what the webhook found out
 * about its runtime's trust-bundle capability (./trust-bundle-capability.ts).
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import { ESCAPED_PODS_KEY, readEscaped, type EscapedPodsReport } from './escaped-pods.js';
import { readRegistryCaches, REGISTRY_CACHES_KEY, type RegistryCachesReport } from './registry-caches.js';
import type { ProjectionFinding, TrustBundleCapability } from './trust-bundle-capability.js';
import {
  PREFLIGHT_KEY,
  readPreflight,
  readWorkloads,
  WORKLOADS_KEY,
  type PreflightReport,
  type WorkloadHealthReport,
} from './workload-health.js';

/** Name of the report ConfigMap, in the webhook's namespace. */
export const WEBHOOK_STATUS_CONFIG_MAP = 'rt-bootstrapper-webhook-status';

/** What the webhook reports (no content of the configuration itself: versions and field paths). */
export interface WebhookStatusReport {
  /** The set version of the ConfigMap whose text is in force. */
  readonly loadedVersion?: string;
  /** The set version of the last text refused (cleared when a later one is taken). */
  readonly refusedVersion?: string;
  /** Why it was refused: the offending fields and what is wrong with them. */
  readonly refusal?: string;
  /** What the webhook found out about the trust-bundle mount on its runtime (absent: not yet). */
  readonly trustBundle?: TrustBundleCapability;
  /**
   * Per set version, the Pods the webhook changed under it and the failures the change can cause
   * (./workload-health.ts); absent when the webhook reports none (or wrote something malformed).
   */
  readonly workloads?: WorkloadHealthReport;
  /** What the last preflight of a candidate set found; absent when none ran. */
  readonly preflight?: PreflightReport;
  /** The agent's last count of escaped Pods (./escaped-pods.ts); absent when none was written. */
  readonly escapedPods?: EscapedPodsReport;
  /** The agent's last look at customers' registry caches (./registry-caches.ts); absent: none written. */
  readonly registryCaches?: RegistryCachesReport;
  /** Set when the KCP refused the report, or a part of it, when reading it (never written). */
  readonly refused?: ReportRefusal;
}

/** Why the KCP refused a report (or part of it) it read from a runtime. */
export interface ReportRefusal {
  /** `TooLarge`: nothing of it was parsed; `OutOfBounds`: the keys named were left out. */
  readonly reason: 'TooLarge' | 'OutOfBounds';
  readonly message: string;
}

/**
 * The most bytes (UTF-8) of the values the KCP reads from the report ConfigMap, checked before
 * any of it is parsed: the report is a runtime admin's to write. What the webhook writes stays
 * far below it (five revisions of five samples, the preflight's five, a refusal of 2,000
 * characters: about 100 KB of ASCII, three times that at worst in UTF-8).
 */
export const REPORT_MAX_BYTES = 512 * 1024;

// Keys of the trust-bundle finding in the ConfigMap.
const API_KEY = 'trustBundleAPI';
const PROJECTION_KEY = 'trustBundleProjection';
const DETAIL_KEY = 'trustBundleDetail';
const KUBELETS_KEY = 'trustBundleKubelets';
/** The longest kubelet finding read (the webhook writes at most 1,000 characters). */
const KUBELETS_MAX_CHARS = 2_000;
const PROJECTIONS: readonly string[] = ['kept', 'dropped', 'unknown'] satisfies ProjectionFinding[];

/** The report as ConfigMap data (the keys every replica writes). */
export function reportData(report: WebhookStatusReport): Record<string, string> {
  const data: Record<string, string> = {};
  if (report.loadedVersion !== undefined) data.loadedVersion = report.loadedVersion;
  if (report.refusedVersion !== undefined) data.refusedVersion = report.refusedVersion;
  if (report.refusal !== undefined) data.refusal = report.refusal;
  const t = report.trustBundle;
  if (t !== undefined) {
    data[API_KEY] = t.api;
    data[PROJECTION_KEY] = t.projection;
    if (t.detail !== undefined) data[DETAIL_KEY] = t.detail;
    if (t.kubelets !== undefined) data[KUBELETS_KEY] = t.kubelets;
  }
  // `workloads` and `preflight` are not here: the leader writes them under their own field
  // manager (./workload-health.ts WORKLOAD_FIELD_MANAGER), and this data is every replica's apply.
  return data;
}

/** The keys of the ConfigMap the KCP reads (others, such as the webhook's own, are not read). */
const READ_KEYS: readonly string[] = [
  'loadedVersion',
  'refusedVersion',
  'refusal',
  API_KEY,
  PROJECTION_KEY,
  DETAIL_KEY,
  KUBELETS_KEY,
  WORKLOADS_KEY,
  PREFLIGHT_KEY,
  ESCAPED_PODS_KEY,
  REGISTRY_CACHES_KEY,
];

/** The bytes of the values the KCP reads (linear in their length, nothing parsed). */
export function reportBytes(data: Readonly<Record<string, unknown>>): number {
  let bytes = 0;
  for (const key of READ_KEYS) {
    const v = data[key];
    if (typeof v === 'string') bytes += Buffer.byteLength(v, 'utf8');
  }
  return bytes;
}

/**
 * The report a ConfigMap holds (empty when there is none). Bounded before it is parsed: over
 * {@link REPORT_MAX_BYTES} it is refused whole (`refused`, nothing else). Counts are safe
 * integers (zod's `int()`), which the CRD's 64-bit integers hold; a JSON key that does not parse
 * within its bounds is left out and named in `refused`.
 */
export function readReport(cm: V1ConfigMap | undefined): WebhookStatusReport {
  const d = cm?.data ?? {};
  const bytes = reportBytes(d);
  if (bytes > REPORT_MAX_BYTES) {
    return {
      refused: {
        reason: 'TooLarge',
        message: `the webhook's status report holds ${bytes} bytes, more than the ${REPORT_MAX_BYTES} the KCP reads: not read`,
      },
    };
  }
  const api = d[API_KEY];
  const projection = d[PROJECTION_KEY];
  const detail = d[DETAIL_KEY];
  const kubelets = d[KUBELETS_KEY]?.slice(0, KUBELETS_MAX_CHARS);
  const trustBundle: TrustBundleCapability | undefined =
    api !== undefined && projection !== undefined && PROJECTIONS.includes(projection)
      ? {
          api,
          projection: projection as ProjectionFinding,
          detail,
          kubelets: kubelets === '' ? undefined : kubelets,
        }
      : undefined;
  const workloads = readWorkloads(d[WORKLOADS_KEY]);
  const preflight = readPreflight(d[PREFLIGHT_KEY]);
  const escapedPods = readEscaped(d[ESCAPED_PODS_KEY]);
  const registryCaches = readRegistryCaches(d[REGISTRY_CACHES_KEY]);
  const outOfBounds = [
    ...(workloads === undefined && d[WORKLOADS_KEY] !== undefined ? [WORKLOADS_KEY] : []),
    ...(preflight === undefined && d[PREFLIGHT_KEY] !== undefined ? [PREFLIGHT_KEY] : []),
    ...(escapedPods === undefined && d[ESCAPED_PODS_KEY] !== undefined ? [ESCAPED_PODS_KEY] : []),
    ...(registryCaches === undefined && d[REGISTRY_CACHES_KEY] !== undefined ? [REGISTRY_CACHES_KEY] : []),
  ];
  const refused: ReportRefusal | undefined =
    outOfBounds.length > 0
      ? {
          reason: 'OutOfBounds',
          message: `the webhook's status report: ${outOfBounds.join(', ')} not read (malformed, or a value out of bounds)`,
        }
      : undefined;
  return {
    loadedVersion: d.loadedVersion,
    refusedVersion: d.refusedVersion,
    refusal: d.refusal,
    trustBundle,
    workloads,
    preflight,
    escapedPods,
    registryCaches,
    refused,
  };
}
