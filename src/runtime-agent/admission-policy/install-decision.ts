/**
 * What the runtime agent does with the admission policy on its runtime (pure;
 * docs/admission-policy.md, "Per runtime: who installs it"): from what discovery found, what the
 * runtime holds and the config the webhook has loaded, the objects to apply and the admission path
 * to report.
 *
 * One installer per runtime: where the KCP installs the policy (direct mode: the webhook is told
 * so, and objects it wrote carry its field manager), the agent writes nothing and only reports;
 * elsewhere (KIM's runtimes, an upstream-style install) the agent installs the parameters, the
 * policy and the binding, each only when its content changed. It never removes an object.
 */
import { createHash } from 'node:crypto';
import {
  ADMISSION_API_NOT_SERVED,
  writeAdmissionPath,
  type AdmissionPathReport,
} from '../../api/admission-path-report.js';
import { FIELD_MANAGER } from '../../api/runtime-names.js';
import type { WebhookConfig } from '../../api/webhook-config.js';
import type { ApiChoice } from '../../kube/served-api.js';
import { AdmissionPolicyConfigError } from '../../render/admission-policy-params.js';
import {
  admissionPolicyManifestList,
  renderAdmissionPolicy,
  type AdmissionPolicyApiVersion,
} from '../../render/admission-policy.js';

/** On each object the agent applies: the digest of what it applied, so equal content is not written again. */
export const ADMISSION_POLICY_HASH_ANNOTATION = 'rt-bootstrapper.kyma-project.io/admission-policy-hash';

/** A JSON object as the API takes it. */
export type Manifest = Record<string, unknown>;

/** One of the policy's objects as found on the runtime (absent: not found). */
export interface FoundObject {
  /** The field managers of its `managedFields`. */
  readonly managers: readonly string[];
  /** Its {@link ADMISSION_POLICY_HASH_ANNOTATION}, if any. */
  readonly hash: string | undefined;
}

/** What the runtime holds of the parameters, the policy and the binding. */
export interface FoundObjects {
  readonly params: FoundObject | undefined;
  readonly policy: FoundObject | undefined;
  readonly binding: FoundObject | undefined;
}

/** The webhook's state the policy is rendered from. */
export interface LoadedState {
  /** The config the webhook has loaded (undefined before the first good one). */
  readonly config: WebhookConfig | undefined;
  /** The set version the webhook reports as loaded (the revision it stamps). */
  readonly revision: string | undefined;
  /** The trust bundle the webhook follows (name and hash), when known. */
  readonly trustBundle: { readonly name: string; readonly hash: string } | undefined;
  /** Whether the webhook's own trust capability found the projection kept. */
  readonly trustBundleMount: boolean;
  /** The parameters' namespace (the webhook's). */
  readonly namespace: string;
}

/** What to do: objects to apply (in order) and the path to report. */
export interface InstallDecision {
  readonly apply: readonly Manifest[];
  readonly report: AdmissionPathReport;
}

/** Input of {@link decideInstall}. */
export interface InstallInput {
  readonly api: ApiChoice<AdmissionPolicyApiVersion>;
  /** false where the KCP installs the policy (direct mode): the agent only reports. */
  readonly installsHere: boolean;
  readonly found: FoundObjects;
  readonly loaded: LoadedState;
}

/** Whether the KCP wrote the object (its field manager is among the writers). */
const byKcp = (o: FoundObject | undefined): boolean => o?.managers.includes(FIELD_MANAGER) === true;

/** The path in force where the agent does not install: what the runtime holds tells. */
function observed(api: string, found: FoundObjects, reason: string): InstallDecision {
  const installed = found.policy !== undefined && found.binding !== undefined;
  return {
    apply: [],
    report: {
      path: installed ? 'policy' : 'webhook',
      api,
      installer: 'kcp',
      reason: installed ? undefined : `${reason}; the policy is not installed yet`,
    },
  };
}

/** `m` stamped with the digest of its content (the digest itself left out). */
export function stamped(m: Manifest): { readonly manifest: Manifest; readonly hash: string } {
  const hash = createHash('sha256').update(JSON.stringify(m)).digest('hex').slice(0, 32);
  const metadata = (m.metadata ?? {}) as { annotations?: Record<string, string> };
  return {
    manifest: {
      ...m,
      metadata: {
        ...metadata,
        annotations: { ...metadata.annotations, [ADMISSION_POLICY_HASH_ANNOTATION]: hash },
      },
    },
    hash,
  };
}

/**
 * The decision (see the file comment). A config the policy cannot carry gets empty parameters:
 * every evaluation then fails, `failurePolicy: Ignore` skips it, and the webhook alone admits,
 * as direct mode does (../../controller/direct/admission-policy-plan.ts).
 */
export function decideInstall(input: InstallInput): InstallDecision {
  const { api, found, loaded } = input;
  if (!api.served)
    return {
      apply: [],
      report: { path: 'webhook', api: ADMISSION_API_NOT_SERVED, installer: 'none', reason: api.found },
    };
  if (!input.installsHere) return observed(api.apiVersion, found, 'the KCP installs the policy here');
  if (byKcp(found.params) || byKcp(found.policy) || byKcp(found.binding))
    return observed(api.apiVersion, found, 'the KCP wrote the policy here');
  const config = loaded.config;
  if (config === undefined)
    return {
      apply: [],
      report: {
        path: 'webhook',
        api: api.apiVersion,
        installer: 'agent',
        reason: 'no configuration loaded yet',
      },
    };
  let refusal: AdmissionPolicyConfigError | undefined;
  let manifests;
  try {
    manifests = renderAdmissionPolicy(config, {
      apiVersion: api.version,
      namespace: loaded.namespace,
      revision: loaded.revision,
      trustBundleName: config.clusterTrustBundle === undefined ? undefined : loaded.trustBundle?.name,
      trustBundleHash: loaded.trustBundle?.hash,
      trustBundleMount: loaded.trustBundleMount,
    });
  } catch (error) {
    if (!(error instanceof AdmissionPolicyConfigError)) throw error;
    refusal = error;
    const empty = renderAdmissionPolicy(
      { ...config, overrides: {}, namespaceFeatures: {}, clusterTrustBundle: undefined },
      { apiVersion: api.version, namespace: loaded.namespace },
    );
    manifests = { ...empty, params: { ...empty.params, data: {} } };
  }
  const [params, policy, binding] = admissionPolicyManifestList(manifests).map(stamped);
  const apply = [
    ...(params && found.params?.hash !== params.hash ? [params.manifest] : []),
    ...(policy && found.policy?.hash !== policy.hash ? [policy.manifest] : []),
    ...(binding && found.binding?.hash !== binding.hash ? [binding.manifest] : []),
  ];
  return {
    apply,
    report:
      refusal === undefined
        ? { path: 'policy', api: api.apiVersion, installer: 'agent' }
        : {
            path: 'webhook',
            api: api.apiVersion,
            installer: 'agent',
            reason: `the config is more than the policy carries (${refusal.message})`,
          },
  };
}

/** What one pass writes: the objects to apply and the report's text, where it changed. */
export interface PassWrites {
  readonly apply: readonly Manifest[];
  /** The report's text to write; undefined where it is what this term wrote already. */
  readonly report: string | undefined;
}

/**
 * What a pass writes after `decision`, given whether this replica still leads (read after the
 * reads, just before writing) and the report's text this term wrote last (pure). Undefined where
 * it no longer leads: it writes nothing and keeps its last report (a new leader writes its own).
 */
export function passWrites(
  decision: InstallDecision,
  leads: boolean,
  written: string | undefined,
): PassWrites | undefined {
  if (!leads) return undefined;
  const text = writeAdmissionPath(decision.report);
  return { apply: decision.apply, report: text === written ? undefined : text };
}
