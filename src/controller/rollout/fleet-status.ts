import type { RolloutPolicyResource } from '../../api/rollout-policy.js';
import type { RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import { DEFAULT_MIN_FAILED_RUNTIMES } from './rollout-policy.js';
import { runtimeView } from './runtime-view.js';

/** The fleet as `rtb status` shows it (its `-o json`). */
export interface FleetStatus {
  readonly runtimes: number;
  readonly byState: Record<string, number>;
  readonly bySetVersion: Record<string, number>;
  readonly byWebhookVersion: Record<string, number>;
  /**
   * The ClusterTrustBundle API version the runtimes serve (`status.clusterTrustBundleAPI`;
   * `none` where condition TrustBundleAPI says NotServed, `(none)` where not known yet).
   */
  readonly byTrustBundleAPI: Record<string, number>;
  /** How Pods are mutated: `policy <apiVersion>` (our MutatingAdmissionPolicy) or `webhook` alone. */
  readonly byAdmissionPath: Record<string, number>;
  /** Runtimes whose webhook mounts no trust bundle (no API served, or the projection dropped), with why. */
  readonly noTrustBundleMount: readonly { runtime: string; reason: string; message: string }[];
  /** The rollout, or null without a RolloutPolicy (one wave of everything). */
  readonly rollout: {
    readonly policy: string;
    readonly phase?: string;
    readonly wave?: string;
    readonly target?: string;
    readonly stable?: string;
    readonly message?: string;
    readonly haltReason?: string;
    readonly policyProblem?: string;
    /** Runtimes failed in the waves started so far, each with why (its own report or the KCP's deadline). */
    readonly failures: readonly { runtime: string; reason: string }[];
    /**
     * When the rollout halts: more than `failureThreshold` failed runtimes, on at least
     * `minFailedRuntimes` (capped at the runtimes of the waves started), as the spec says or defaults.
     */
    readonly halt: { readonly failureThreshold: number; readonly minFailedRuntimes: number };
    /** What the target changes against the stable revision (absent: not known). */
    readonly changes?: readonly string[];
    /**
     * What waits for whom: the wave that waits to start, since when, and the decisions it waits
     * for (`approve`: a person's approval; `resume`: the end of a pause), each with its command.
     */
    readonly waiting?: {
      readonly wave: string;
      readonly since: string;
      readonly for: readonly { readonly decision: 'approve' | 'resume'; readonly command: string }[];
    };
    /** Who paused the rollout, and when. */
    readonly paused?: { readonly user: string; readonly at: string };
    /** Who approved or rejected which wave of the target, and when. */
    readonly decisions: readonly { wave: string; decision: string; user: string; at: string }[];
  } | null;
  /** Runtimes in Error or whose webhook refused the set applied, with why. */
  readonly failing: readonly { runtime: string; state: string; reason: string }[];
  /**
   * Runtimes whose Pods failed under the set applied for a reason the change can cause (condition
   * Degraded True), with the webhook's samples.
   */
  readonly degraded: readonly DegradedRuntime[];
  /** Runtimes whose last preflight found images missing, refused or unreachable at their new location. */
  readonly preflight: readonly PreflightFinding[];
  /** Runtimes with running Pods that do not follow the set in force (condition EscapedPods True). */
  readonly escaped: readonly EscapedRuntime[];
  /**
   * Runtimes where hosts the overrides rewrite have a customer's registry cache (condition
   * RegistryCache True): `Bypassed` (still rewritten) or `LeftToCache`, the hosts in the message.
   */
  readonly registryCaches: readonly { runtime: string; reason: string; message: string }[];
}

/** A runtime with escaped Pods, as `rtb status` shows it. */
export interface EscapedRuntime {
  readonly runtime: string;
  readonly pods: number;
  readonly reasons: Readonly<Record<string, number>>;
  readonly bare: number;
  readonly repair: boolean;
}

/** A Degraded runtime, as `rtb status` shows it. */
export interface DegradedRuntime {
  readonly runtime: string;
  /** The set version the Pods failed under. */
  readonly revision: string;
  readonly failedPods: number;
  readonly failing: number;
  readonly samples: readonly { image?: string; pod: string; reason: string; message?: string }[];
}

/** A preflight that found images its candidate cannot serve. */
export interface PreflightFinding {
  readonly runtime: string;
  readonly version: string;
  readonly phase: string;
  readonly checked: number;
  readonly missing: number;
  readonly refused: number;
  readonly unreachable: number;
  readonly samples: readonly { image: string; target: string; result: string; detail?: string }[];
}

const count = (into: Record<string, number>, key: string | undefined): void => {
  const k = key ?? '(none)';
  into[k] = (into[k] ?? 0) + 1;
};

/** Summarises the RuntimeBootstrappers and the rollout policy (pure). */
export function fleetStatus(
  rbs: readonly RuntimeBootstrapper[],
  policy: RolloutPolicyResource | undefined,
): FleetStatus {
  const byState: Record<string, number> = {};
  const bySetVersion: Record<string, number> = {};
  const byWebhookVersion: Record<string, number> = {};
  const byTrustBundleAPI: Record<string, number> = {};
  const byAdmissionPath: Record<string, number> = {};
  const noTrustBundleMount: { runtime: string; reason: string; message: string }[] = [];
  const failing: { runtime: string; state: string; reason: string }[] = [];
  const degraded: DegradedRuntime[] = [];
  const preflight: PreflightFinding[] = [];
  const escaped: EscapedRuntime[] = [];
  const registryCaches: { runtime: string; reason: string; message: string }[] = [];
  for (const rb of [...rbs].sort((a, b) => a.spec.runtimeID.localeCompare(b.spec.runtimeID))) {
    const s = rb.status;
    count(byState, s?.state ?? 'Pending');
    count(bySetVersion, s?.appliedVersion);
    count(byWebhookVersion, s?.webhookVersion);
    const api = s?.conditions?.find((c) => c.type === 'TrustBundleAPI');
    count(byTrustBundleAPI, api?.status === 'False' ? 'none' : s?.clusterTrustBundleAPI);
    count(
      byAdmissionPath,
      s?.admissionPolicyAPI === undefined ? 'webhook' : `policy ${s.admissionPolicyAPI}`,
    );
    const projection = s?.conditions?.find((c) => c.type === 'TrustBundleProjection');
    const against = api?.status === 'False' ? api : projection?.status === 'False' ? projection : undefined;
    if (against)
      noTrustBundleMount.push({
        runtime: rb.spec.runtimeID,
        reason: against.reason,
        message: against.message,
      });
    const w = s?.workloads;
    const e = s?.escapedPods;
    if (e !== undefined && e.pods > 0)
      escaped.push({
        runtime: rb.spec.runtimeID,
        pods: e.pods,
        reasons: e.reasons ?? {},
        bare: e.bare,
        repair: e.repair,
      });
    const cache = s?.conditions?.find((c) => c.type === 'RegistryCache' && c.status === 'True');
    if (cache)
      registryCaches.push({ runtime: rb.spec.runtimeID, reason: cache.reason, message: cache.message });
    const isDegraded = s?.conditions?.some((c) => c.type === 'Degraded' && c.status === 'True') === true;
    if (isDegraded && w !== undefined)
      degraded.push({
        runtime: rb.spec.runtimeID,
        revision: w.revision,
        failedPods: w.failedPods,
        failing: w.failing,
        samples: w.samples.map((x) => ({
          pod: x.pod,
          reason: x.reason,
          image: x.image,
          message: x.message,
        })),
      });
    const p = s?.preflight;
    if (p !== undefined && p.missing + p.refused + p.unreachable > 0)
      preflight.push({
        runtime: rb.spec.runtimeID,
        version: p.version,
        phase: p.phase,
        checked: p.checked,
        missing: p.missing,
        refused: p.refused,
        unreachable: p.unreachable,
        samples: p.samples,
      });
    const view = runtimeView(rb);
    if (view.health === 'failed' || s?.state === 'Error') {
      failing.push({ runtime: rb.spec.runtimeID, state: s?.state ?? 'Pending', reason: view.reason ?? '' });
    }
  }
  const st = policy?.status;
  return {
    runtimes: rbs.length,
    byState,
    bySetVersion,
    byWebhookVersion,
    byTrustBundleAPI,
    byAdmissionPath,
    noTrustBundleMount,
    rollout: policy
      ? {
          policy: policy.metadata.name,
          phase: st?.phase,
          wave: st?.waveName,
          target: st?.target,
          stable: st?.stable,
          message: st?.message,
          haltReason: st?.haltReason,
          policyProblem: st?.policyProblem,
          failures: st?.failures ?? [],
          halt: {
            failureThreshold: policy.spec.failureThreshold ?? 0,
            minFailedRuntimes: policy.spec.minFailedRuntimes ?? DEFAULT_MIN_FAILED_RUNTIMES,
          },
          ...(st?.changes !== undefined ? { changes: st.changes } : {}),
          ...waitingOf(policy),
          ...(st?.paused ? { paused: { user: st.paused.user, at: st.paused.at } } : {}),
          decisions: (st?.decisions ?? []).map((d) => ({
            wave: d.wave,
            decision: d.decision,
            user: d.user,
            at: d.at,
          })),
        }
      : null,
    failing,
    degraded,
    preflight,
    escaped,
    registryCaches,
  };
}

/** What the policy's waiting wave waits for, with the commands that give it. */
function waitingOf(policy: RolloutPolicyResource): {
  waiting?: NonNullable<FleetStatus['rollout']>['waiting'];
} {
  const a = policy.status?.awaiting;
  if (a === undefined) return {};
  const name = policy.metadata.name;
  const wants: { decision: 'approve' | 'resume'; command: string }[] = [];
  if (a.paused) wants.push({ decision: 'resume', command: `rtb rollout resume ${name}` });
  if (a.approval)
    wants.push({ decision: 'approve', command: `rtb rollout approve ${name} (or reject ${name})` });
  return { waiting: { wave: a.wave, since: a.since, for: wants } };
}

const tally = (m: Record<string, number>): string =>
  Object.entries(m)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([k, n]) => `${k} ${n}`)
    .join(', ') || '-';

/** The status as text, for people. */
export function formatFleetStatus(f: FleetStatus): string {
  const lines = [
    `Runtimes: ${f.runtimes} (${tally(f.byState)})`,
    `Set versions: ${tally(f.bySetVersion)}`,
    `Webhook releases: ${tally(f.byWebhookVersion)}`,
    `ClusterTrustBundle API: ${tally(f.byTrustBundleAPI)}`,
    `Admission: ${tally(f.byAdmissionPath)}`,
  ];
  const r = f.rollout;
  if (!r) lines.push('Rollout: no RolloutPolicy (every change goes to every runtime at once)');
  else {
    lines.push(
      `Rollout (policy ${r.policy}): ${r.phase ?? 'not started'}${r.wave ? `, wave ${r.wave}` : ''}`,
    );
    if (r.message) lines.push(`  ${r.message}`);
    if (r.target) lines.push(`  target ${r.target}, stable ${r.stable ?? '-'}`);
    if (r.policyProblem) lines.push(`  policy refused (default in force): ${r.policyProblem}`);
    if (r.changes) lines.push(`  the target changes: ${r.changes.join(', ') || 'no source'}`);
    if (r.waiting) {
      const wants = r.waiting.for.map(
        (w) => `${w.decision === 'approve' ? 'an approval' : 'a resume'}: ${w.command}`,
      );
      lines.push(
        `  wave ${r.waiting.wave} waits since ${r.waiting.since} for ${wants.join('; ') || 'its next pass'}`,
      );
    }
    if (r.paused) lines.push(`  paused by ${r.paused.user} at ${r.paused.at}`);
    for (const d of r.decisions)
      lines.push(`  ${d.decision.toLowerCase()}: wave ${d.wave} by ${d.user} at ${d.at}`);
    if (r.failures.length > 0)
      lines.push(
        `  ${r.failures.length} runtime(s) failed; a halt needs more than ${r.halt.failureThreshold} and at least ${r.halt.minFailedRuntimes} (or every runtime of the waves started)`,
      );
    for (const x of r.failures) lines.push(`  failed in the rollout: ${x.runtime}: ${x.reason}`);
  }
  if (f.noTrustBundleMount.length > 0) {
    lines.push('No trust-bundle mount:');
    for (const x of f.noTrustBundleMount) lines.push(`  ${x.runtime}  ${x.reason}  ${x.message}`);
  }
  if (f.failing.length > 0) {
    lines.push('Failing:');
    for (const x of f.failing) lines.push(`  ${x.runtime}  ${x.state}  ${x.reason}`);
  }
  if (f.degraded.length > 0) {
    lines.push('Degraded (Pods failing for a reason the change can cause):');
    for (const x of f.degraded) {
      lines.push(
        `  ${x.runtime}  set ${x.revision}: ${x.failedPods} Pod(s) failed, ${x.failing} failing now`,
      );
      for (const e of x.samples)
        lines.push(`    ${e.image ?? '-'}  ${e.reason}  ${e.pod}${e.message ? `  ${e.message}` : ''}`);
    }
  }
  if (f.preflight.length > 0) {
    lines.push('Preflight findings:');
    for (const x of f.preflight) {
      lines.push(
        `  ${x.runtime}  set ${x.version} (${x.phase}): ${x.missing} missing, ${x.refused} refused, ${x.unreachable} unreachable of ${x.checked} checked`,
      );
      for (const e of x.samples)
        lines.push(`    ${e.result}  ${e.image} -> ${e.target}${e.detail ? `  ${e.detail}` : ''}`);
    }
  }
  if (f.escaped.length > 0) {
    lines.push('Escaped Pods (running, admitted without the webhook; docs/runbooks/RtbEscapedPods.md):');
    for (const x of f.escaped)
      lines.push(
        `  ${x.runtime}  ${x.pods} Pod(s) (${tally(x.reasons)}), ${x.bare} bare, repair ${x.repair ? 'on' : 'off'}`,
      );
  }
  if (f.registryCaches.length > 0) {
    lines.push("Customers' registry caches on hosts the overrides rewrite (docs/registry-caches.md):");
    for (const x of f.registryCaches) lines.push(`  ${x.runtime}  ${x.reason}  ${x.message}`);
  }
  return `${lines.join('\n')}\n`;
}
