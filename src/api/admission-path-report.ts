/**
 * Which admission path is in force on a runtime, as the runtime agent reports it in the status
 * ConfigMap (./webhook-status.ts) under its own key and field manager
 * (../runtime-agent/admission-policy/): the MutatingAdmissionPolicy (at which API version, and
 * who installed it) or the webhook alone (and why). Names and the report's shape, which both
 * sides share; the value is a runtime admin's to write, so it is bounded before it is parsed.
 */
import { z } from 'zod';
import type { ApiFamily } from '../kube/served-api.js';

/** The versions of MutatingAdmissionPolicy spoken, most preferred first (DESIGN §13). */
export type AdmissionPolicyVersion = 'v1' | 'v1beta1';

/** MutatingAdmissionPolicy as discovery looks for it (../kube/served-api.ts). */
export const ADMISSION_POLICY_API: ApiFamily<AdmissionPolicyVersion> = {
  group: 'admissionregistration.k8s.io',
  resource: 'mutatingadmissionpolicies',
  kind: 'MutatingAdmissionPolicy',
  versions: ['v1', 'v1beta1'],
};

/** Key of the status ConfigMap that carries the report. */
export const ADMISSION_PATH_KEY = 'admissionPolicy';

/**
 * Field manager of {@link ADMISSION_PATH_KEY} and of the admission policy's objects the agent
 * installs: only the agent's leader writes them, and an apply of another manager that leaves the
 * key out must not remove it.
 */
export const ADMISSION_POLICY_FIELD_MANAGER = 'rt-bootstrapper-webhook-admission-policy';

/** The longest `reason` a report carries. */
export const MAX_ADMISSION_REASON_CHARS = 300;
/** `api` where the runtime serves no MutatingAdmissionPolicy version we speak. */
export const ADMISSION_API_NOT_SERVED = 'none';

const reportShape = z.object({
  /** `policy`: the policy mutates Pods inside the API server; `webhook`: the webhook alone. */
  path: z.enum(['policy', 'webhook']),
  /** `admissionregistration.k8s.io/v1` or `…/v1beta1` where served, else {@link ADMISSION_API_NOT_SERVED}. */
  api: z.string().max(64),
  /** Who installs the policy's objects: the agent, the KCP (direct mode), or nobody (not served). */
  installer: z.enum(['agent', 'kcp', 'none']),
  /** Why the webhook alone admits, or what holds the policy back (one line). */
  reason: z.string().max(MAX_ADMISSION_REASON_CHARS).optional(),
});

/** What the agent reports of the admission path. */
export type AdmissionPathReport = z.infer<typeof reportShape>;

/** The most characters of the report read (its fields at their bounds fit). */
export const ADMISSION_PATH_REPORT_MAX_CHARS = 2 * MAX_ADMISSION_REASON_CHARS + 256;

/** The report as the ConfigMap value (JSON; `reason` cut to its bound). */
export function writeAdmissionPath(report: AdmissionPathReport): string {
  const reason = report.reason?.replace(/[\r\n]+/g, ' ').slice(0, MAX_ADMISSION_REASON_CHARS);
  return JSON.stringify({ ...report, reason });
}

/** The report a ConfigMap value holds; undefined when absent, too long or malformed. */
export function readAdmissionPath(value: string | undefined): AdmissionPathReport | undefined {
  if (value === undefined || value.length > ADMISSION_PATH_REPORT_MAX_CHARS) return undefined;
  try {
    const parsed = reportShape.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
