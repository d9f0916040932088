/**
 * The timing of the serving-certificate protocol (docs/serving-certificate.md) and the Secret
 * annotations that carry its timestamps from one writer (or one writer's term) to the next.
 */

/** Timing of {@link planServingSecret} (./serving-secret-plan.ts); every duration in ms. */
export interface ServingPolicy {
  /** Validity of a new serving certificate (capped by its CA's). */
  readonly servingLifetimeMs: number;
  /** Renew the serving certificate once less than this fraction of its life is left. */
  readonly servingRenewFraction: number;
  /** Validity of a CA the webhook creates itself. */
  readonly caLifetimeMs: number;
  /** Add the next CA once less than this fraction of the signing CA's life is left. */
  readonly caRotateFraction: number;
  /**
   * How long a CA must have been in every caBundle of our webhook configurations before a
   * certificate it signed is served: the API server reads the configurations through an informer.
   */
  readonly settleMs: number;
  /**
   * How long a CA stays trusted after the Secret's certificate moved to another CA: replicas
   * still serving the old one (their watch lags, or the API server is out of their reach) keep
   * working, and a replica that stays behind longer turns unready instead of failing calls.
   */
  readonly overlapMs: number;
}

const DAY_MS = 24 * 3600 * 1000;

/**
 * The webhook's own writer: certificates for 90 days, renewed in their last third; a CA for a
 * year, the next one added in its last third (so a serving certificate never needs a CA that is
 * about to expire). Settle 20 s (the API server's informer delivers within about a second), overlap 1 h.
 */
export const WEBHOOK_SERVING_POLICY: ServingPolicy = {
  servingLifetimeMs: 90 * DAY_MS,
  servingRenewFraction: 1 / 3,
  caLifetimeMs: 365 * DAY_MS,
  caRotateFraction: 1 / 3,
  settleMs: 20_000,
  overlapMs: 3600_000,
};

/**
 * The KCP in direct mode: as the webhook, but renewing at half the certificate's life, so while
 * the KCP reconciles a runtime the webhook's writer (last third) never has to issue.
 */
export const KCP_SERVING_POLICY: ServingPolicy = { ...WEBHOOK_SERVING_POLICY, servingRenewFraction: 1 / 2 };

/** Annotation on the Secret: JSON `{ "<CA sha256>": "<ISO time>" }`, since when each CA is in every caBundle. */
export const CA_TRUSTED_SINCE_ANNOTATION = 'rt-bootstrapper.kyma-project.io/ca-trusted-since';
/** Annotation on the Secret: when its `tls.crt` was written (ISO time). */
export const SERVING_SINCE_ANNOTATION = 'rt-bootstrapper.kyma-project.io/serving-since';

/** A policy that cannot work; names the field. */
export class ServingPolicyError extends Error {
  override readonly name = 'ServingPolicyError';
}

/** Refuses a policy whose durations are not positive or whose fractions are not in (0, 1). */
export function validateServingPolicy(p: ServingPolicy): void {
  const durations = ['servingLifetimeMs', 'caLifetimeMs', 'settleMs', 'overlapMs'] as const;
  for (const f of durations)
    if (!(Number.isFinite(p[f]) && p[f] > 0))
      throw new ServingPolicyError(`${f} must be positive, got ${p[f]}`);
  for (const f of ['servingRenewFraction', 'caRotateFraction'] as const)
    if (!(p[f] > 0 && p[f] < 1)) throw new ServingPolicyError(`${f} must be in (0, 1), got ${p[f]}`);
  if (!(p.settleMs < p.servingLifetimeMs * p.servingRenewFraction))
    throw new ServingPolicyError(
      'settleMs must be shorter than the renewal window (servingLifetimeMs × servingRenewFraction)',
    );
}
