import { isDeepStrictEqual } from 'node:util';
import type {
  BootstrapperState,
  Condition,
  ConditionType,
  EscapedPodsSummary,
  RuntimeBootstrapper,
  RuntimeBootstrapperStatus,
  TrustRestartSummary,
  WorkloadsSummary,
} from '../../api/runtime-bootstrapper.js';
import type { PreflightReport } from '../../api/workload-health.js';

/**
 * Builds the next status from the current one (pure): a condition's lastTransitionTime moves
 * only when its status changes, as metav1.Condition semantics ask.
 */
export class StatusBuilder {
  private readonly next: RuntimeBootstrapperStatus;

  constructor(
    private readonly rb: RuntimeBootstrapper,
    private readonly now: Date,
  ) {
    const current = rb.status ?? {};
    this.next = {
      ...current,
      conditions: [...(current.conditions ?? [])],
      observedGeneration: rb.metadata.generation ?? 0,
    };
  }

  /** Sets `status.state`. */
  state(state: BootstrapperState): this {
    this.next.state = state;
    return this;
  }

  /** Sets a condition. */
  condition(type: ConditionType, status: Condition['status'], reason: string, message: string): this {
    const list = this.next.conditions ?? [];
    const old = list.find((c) => c.type === type);
    const updated: Condition = {
      type,
      status,
      reason,
      message: message.slice(0, 32_000),
      observedGeneration: this.rb.metadata.generation ?? 0,
      lastTransitionTime: old && old.status === status ? old.lastTransitionTime : this.now.toISOString(),
    };
    this.next.conditions = [...list.filter((c) => c.type !== type), updated].sort(
      (a, b) => order(a.type) - order(b.type),
    );
    return this;
  }

  /** Records the set version and webhook release applied. */
  applied(fields: { appliedVersion?: string; webhookVersion?: string }): this {
    if (fields.appliedVersion !== undefined) {
      this.next.appliedVersion = fields.appliedVersion;
      this.next.appliedAt = this.now.toISOString();
    }
    if (fields.webhookVersion !== undefined) this.next.webhookVersion = fields.webhookVersion;
    return this;
  }

  /** Records what the runtime's webhook reports it loaded or refused (a field it leaves out is cleared). */
  served(report: { servedVersion?: string; refusedVersion?: string; refusal?: string }): this {
    delete this.next.servedVersion;
    delete this.next.refusedVersion;
    delete this.next.refusal;
    Object.assign(this.next, report);
    return this;
  }

  /** Records the trust-bundle restarter's last report (none: the field is cleared). */
  trustRestart(summary: TrustRestartSummary | undefined): this {
    if (summary === undefined) delete this.next.trustRestart;
    else this.next.trustRestart = summary;
    return this;
  }

  /** Records the ClusterTrustBundle API version the runtime serves (none: the field is cleared). */
  trustBundleApi(apiVersion: string | undefined): this {
    if (apiVersion === undefined) delete this.next.clusterTrustBundleAPI;
    else this.next.clusterTrustBundleAPI = apiVersion;
    return this;
  }

  /** Records the MutatingAdmissionPolicy API version the policy is written at (none: the field is cleared). */
  admissionPolicyApi(apiVersion: string | undefined): this {
    if (apiVersion === undefined) delete this.next.admissionPolicyAPI;
    else this.next.admissionPolicyAPI = apiVersion;
    return this;
  }

  /** Records the webhook's figures for the set applied (none: the field is cleared). */
  workloads(summary: WorkloadsSummary | undefined): this {
    if (summary === undefined) delete this.next.workloads;
    else this.next.workloads = summary;
    return this;
  }

  /** Records the webhook's last count of escaped Pods (none: the field is cleared). */
  escapedPods(summary: EscapedPodsSummary | undefined): this {
    if (summary === undefined) delete this.next.escapedPods;
    else this.next.escapedPods = summary;
    return this;
  }

  /** Records the webhook's last preflight (none: the field is cleared). */
  preflight(report: PreflightReport | undefined): this {
    if (report === undefined) delete this.next.preflight;
    else this.next.preflight = report;
    return this;
  }

  /** Records the candidate whose preflight Secret is on the runtime (none: the field is cleared). */
  preflightCandidate(version: string | undefined): this {
    if (version === undefined) delete this.next.preflightCandidate;
    else this.next.preflightCandidate = version;
    return this;
  }

  /** Removes a condition that no longer applies. */
  dropCondition(type: ConditionType): this {
    const list = this.next.conditions ?? [];
    if (list.some((c) => c.type === type)) this.next.conditions = list.filter((c) => c.type !== type);
    return this;
  }

  /** Records the rollout wave the runtime belongs to. */
  wave(name: string): this {
    this.next.rolloutWave = name;
    return this;
  }

  /** No rollout: drops the wave and the webhook's report, which only a rollout keeps current. */
  noRollout(): this {
    delete this.next.rolloutWave;
    delete this.next.servedVersion;
    delete this.next.refusedVersion;
    delete this.next.refusal;
    return this;
  }

  /** The condition as it will be written. */
  get(type: ConditionType): Condition | undefined {
    return this.next.conditions?.find((c) => c.type === type);
  }

  /** The status to write. */
  build(): RuntimeBootstrapperStatus {
    return this.next;
  }
}

const ORDER: readonly ConditionType[] = [
  'RuntimeReachable',
  'Installed',
  'ConfigurationSynced',
  'ServingCertificate',
  'WebhookReady',
  'TrustBundleAPI',
  'TrustBundleProjection',
  'Degraded',
  'EscapedPods',
  'RegistryCache',
];
const order = (t: ConditionType): number => ORDER.indexOf(t);

/** The JSON a status is written as (no undefined members, no Date objects). */
const asJson = (s: RuntimeBootstrapperStatus): unknown => JSON.parse(JSON.stringify(s));

/**
 * Whether two statuses differ in content. Key order is not content: the API server returns an
 * object's keys in its own order, so a status read back never matches the one built here by
 * their text, and an unchanged status must not be written again.
 */
export function statusChanged(
  a: RuntimeBootstrapperStatus | undefined,
  b: RuntimeBootstrapperStatus,
): boolean {
  return !isDeepStrictEqual(asJson(a ?? {}), asJson(b));
}
