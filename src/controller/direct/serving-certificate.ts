/**
 * The KCP's side of the serving-certificate protocol (docs/serving-certificate.md), pure: what it
 * reads on a runtime, the next step with the KCP's CA as the `external` issuer, and what a wait
 * means for the runtime's status and its next reconcile. The webhook's replicas never write in
 * direct mode (`--serving-cert-issuer=external`), so the KCP is the one writer of the Secret and
 * the caBundle.
 */
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type { ServingPolicy } from '../../serving-cert/serving-policy.js';
import {
  caBundleHoldsOthers,
  planServingSecret,
  type ServingPlanInput,
  type ServingStep,
} from '../../serving-cert/serving-secret-plan.js';
import { readServingSecret } from '../../serving-cert/serving-secret-codec.js';
import {
  caBundlesOf,
  MUTATING,
  VALIDATING,
  type ConfigurationKind,
  type WebhookConfiguration,
} from '../../serving-cert/webhook-configurations.js';

/** The serving Secret and our webhook configurations as read from a runtime (undefined: absent). */
export interface ServingView {
  readonly secret: V1Secret | undefined;
  readonly mutating: WebhookConfiguration | undefined;
  readonly validating: WebhookConfiguration | undefined;
  /** Whether Pods we did not start may serve; looked at only when {@link needsServerLook} says so. */
  readonly foreignServers?: boolean;
}

/** Our webhook configurations as the runtime answered their applies (undefined: not applied). */
export type RegistrationAnswers = Pick<ServingView, 'mutating' | 'validating'>;

/** Our two webhook configurations among the answers of applied objects. */
export function registrationAnswers(stored: readonly KubernetesObject[]): RegistrationAnswers {
  const find = (k: ConfigurationKind): WebhookConfiguration | undefined =>
    // The API server answers an apply with the stored object of the kind applied.
    stored.find((o): o is WebhookConfiguration => o.kind === k.kind && o.metadata?.name === k.name);
  return { mutating: find(MUTATING), validating: find(VALIDATING) };
}

/**
 * What the runtime holds after the registration: the Secret as the serving state last knew it,
 * each configuration applied as its apply answered, the others as the serving state knew them;
 * undefined when the serving state knew nothing in this pass (the next serving look reads). A
 * configuration changed meanwhile by someone else makes the next write a 409, which reads again.
 * Whether other Pods serve is looked at again when it matters.
 */
export function afterRegistration(
  known: ServingView | undefined,
  answers: RegistrationAnswers,
): ServingView | undefined {
  if (known === undefined) return undefined;
  return {
    secret: known.secret,
    mutating: answers.mutating ?? known.mutating,
    validating: answers.validating ?? known.validating,
  };
}

/** How the KCP keeps every runtime's serving certificate (the same for all runtimes). */
export interface ServingSettings {
  readonly policy: ServingPolicy;
  /** Names the certificate covers: the Service's DNS names (and any extra ones). */
  readonly dnsNames: readonly string[];
  readonly ipAddresses: readonly string[];
  /** The certificate of the KCP's CA that signs now (it changes with a CA rotation). */
  caPem(): string;
  /** Epoch ms. */
  now(): number;
}

/** A wait step of the plan. */
export type ServingWait = Extract<ServingStep, { kind: 'wait' }>;

/**
 * The longest a runtime waits for the protocol's next deadline before it is reconciled anyway:
 * below any timer's limit (about 24.8 days), and short enough that a lost requeue costs little.
 */
export const MAX_SERVING_WAIT_MS = 3600_000;

/** The next step for this runtime; throws ServingIssuerError when the KCP's CA cannot sign. */
export function nextServingStep(view: ServingView, s: ServingSettings): ServingStep {
  return planServingSecret({ ...planInput(view, s), foreignServers: view.foreignServers === true });
}

/**
 * Whether the plan depends on the Pods behind the webhook Service: only while a caBundle holds a
 * certificate that `ca.crt` does not (a takeover, the end of a CA's overlap), so at rest a pass
 * reads no Pods.
 */
export function needsServerLook(view: ServingView, s: ServingSettings): boolean {
  return view.foreignServers === undefined && caBundleHoldsOthers(planInput(view, s));
}

function planInput(view: ServingView, s: ServingSettings): Omit<ServingPlanInput, 'foreignServers'> {
  return {
    secret: readServingSecret(view.secret),
    bundles: [...caBundlesOf(view.mutating), ...caBundlesOf(view.validating)],
    issuer: { kind: 'external', caPem: s.caPem() },
    dnsNames: s.dnsNames,
    ipAddresses: s.ipAddresses,
    now: s.now(),
    policy: s.policy,
  };
}

/** What a wait means: the condition's reason and when to reconcile again (ms from `now`). */
export interface WaitOutcome {
  /** `Current`: nothing due; `Rotating`: a step is due and waits (e.g. for the API server to load a CA). */
  readonly reason: 'Current' | 'Rotating';
  readonly message: string;
  readonly requeueAfterMs: number;
}

/**
 * The outcome of a wait at `now`: reconcile again at the plan's deadline, at least 1 ms and at most
 * {@link MAX_SERVING_WAIT_MS} away; a pending step without a deadline waits for a change made by
 * someone else, so it is looked at again after the settle time.
 */
export function waitOutcome(step: ServingWait, now: number, policy: ServingPolicy): WaitOutcome {
  const after =
    step.until !== undefined ? step.until - now : step.pending ? policy.settleMs : MAX_SERVING_WAIT_MS;
  return {
    reason: step.pending ? 'Rotating' : 'Current',
    message: step.reason,
    requeueAfterMs: Math.min(Math.max(1, after), MAX_SERVING_WAIT_MS),
  };
}
