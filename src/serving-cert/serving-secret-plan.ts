/**
 * The serving-certificate protocol (docs/serving-certificate.md) as one pure decision: given the
 * Secret, the caBundles of our webhook configurations, the issuer, the names and the time, the
 * next single step. Its writers (the webhook's elected replica with its own CA; the KCP in direct
 * mode with its CA) apply the step and ask again, so every write is small and every
 * intermediate state is safe:
 *
 * 1. a new CA is added to `ca.crt` (the old certificate keeps being served);
 * 2. every caBundle is made equal to `ca.crt`'s unexpired CAs;
 * 3. once a CA has been in every caBundle for the settle time, a certificate it signs may be
 *    written (a certificate is never served before the API server can have loaded its CA);
 * 4. a CA that signs nothing served leaves `ca.crt`, then the caBundles, an overlap after the
 *    certificate moved away from it (and after it was trusted, so a CA just added by another
 *    writer is not taken away before that writer used it).
 *
 * While a Pod behind the webhook Service may serve a certificate that is not from our Secret (an
 * install we take over, serving from its own), no certificate leaves a caBundle: step 2 keeps
 * what the caBundles hold besides `ca.crt`, and the plan looks again after the settle time.
 */
import type { ParsedCertificate } from '../pki/pem-certificates.js';
import { parseCertificate } from '../pki/pem-certificates.js';
import type { ServingPolicy } from './serving-policy.js';
import { CA_TRUSTED_SINCE_ANNOTATION, SERVING_SINCE_ANNOTATION } from './serving-policy.js';
import {
  formatTrustedSince,
  lifeStart,
  readSecretFacts,
  type SecretFacts,
  type ServingSecretContent,
} from './serving-secret-state.js';

/**
 * Who signs: `own` may create CAs and keeps the signing CA's key in the Secret (the webhook);
 * `external` signs with a CA kept elsewhere and never writes a `ca.key` (the KCP, direct mode).
 */
export type ServingIssuer = { readonly kind: 'own' } | { readonly kind: 'external'; readonly caPem: string };

/** Input of {@link planServingSecret}. */
export interface ServingPlanInput {
  /** The Secret's content; undefined when there is no Secret. */
  readonly secret: ServingSecretContent | undefined;
  /** The caBundle (PEM text, '' when unset) of every webhook entry of our configurations; [] when none registers us. */
  readonly bundles: readonly string[];
  readonly issuer: ServingIssuer;
  readonly dnsNames: readonly string[];
  readonly ipAddresses?: readonly string[];
  /** Epoch ms. */
  readonly now: number;
  readonly policy: ServingPolicy;
  /**
   * Whether a Pod behind the webhook Service may serve a certificate that is not from our Secret
   * ({@link caBundleHoldsOthers} says when the answer matters); default false.
   */
  readonly foreignServers?: boolean;
}

/** The Secret to write: what the writer keeps, adds and issues (it makes keys and certificates). */
export interface SecretWrite {
  /** `ca.crt`: these PEMs, in order (then the new CA, if {@link createCa}). */
  readonly caCerts: readonly string[];
  /** Create a CA with this validity, append it to `ca.crt`; its key becomes `ca.key`. */
  readonly createCa?: { readonly lifetimeMs: number };
  /** `ca.key` unless a CA is created: keep it, or remove it (it belongs to no CA in `ca.crt`). */
  readonly caKey: 'keep' | 'remove';
  /** Issue `tls.crt`/`tls.key` with the CA of this fingerprint, valid until `notAfter` (epoch ms). */
  readonly issue?: { readonly signer: string; readonly notAfter: number };
  /** The protocol's annotations: these values; a key left out is removed. */
  readonly annotations: Readonly<Partial<Record<ProtocolAnnotation, string>>>;
}

/** The annotations the protocol owns on the Secret. */
export type ProtocolAnnotation = typeof CA_TRUSTED_SINCE_ANNOTATION | typeof SERVING_SINCE_ANNOTATION;

/** The next step. `reason` is for logs (no key material). */
export type ServingStep =
  | { readonly kind: 'write-secret'; readonly reason: string; readonly write: SecretWrite }
  | { readonly kind: 'write-bundle'; readonly reason: string; readonly bundle: string }
  | {
      readonly kind: 'wait';
      readonly reason: string;
      /** Ask again then (epoch ms) at the latest; undefined: only when something changes. */
      readonly until: number | undefined;
      /** A step is due but must wait (true), or everything is current and `until` is the next deadline. */
      readonly pending: boolean;
    };

/** The external issuer's CA is unusable (the caller's own input, not the cluster's). */
export class ServingIssuerError extends Error {
  override readonly name = 'ServingIssuerError';
}

/** The next step of the protocol; see the file comment. Pure. */
export function planServingSecret(input: ServingPlanInput): ServingStep {
  const { now, policy } = input;
  const f = readSecretFacts(input.secret, input.bundles, input.dnsNames, input.ipAddresses ?? [], now);
  const external = input.issuer.kind === 'external' ? externalCa(input.issuer.caPem, now) : undefined;
  const served = f.serving.ok ? f.serving : undefined;
  const issuerOfServed = served?.issuer;

  // Why the serving certificate must be (re)issued, if it must.
  let renewAt: number | undefined;
  let renew: string | undefined;
  if (!f.serving.ok) renew = f.serving.problem;
  else if (!issuerOfServed) renew = 'the CA of the serving certificate is in neither ca.crt nor the caBundle';
  else if (external && issuerOfServed.fingerprint !== external.fingerprint)
    renew = "the serving certificate was not issued by the issuer's CA";
  else {
    const leaf = f.serving.leaf;
    const end = Math.min(leaf.notAfter, issuerOfServed.notAfter);
    renewAt = end - policy.servingRenewFraction * (leaf.notAfter - lifeStart(leaf));
    if (now >= renewAt) renew = 'the serving certificate is due for renewal';
  }

  // The signing CA: ours (keyed, before its rotation window) or the external one.
  const rotateAt = f.keyed
    ? f.keyed.notAfter - policy.caRotateFraction * (f.keyed.notAfter - lifeStart(f.keyed))
    : undefined;
  const ownSigner = rotateAt !== undefined && now < rotateAt ? f.keyed : undefined;
  const signer = external ?? ownSigner;
  const createCa = !external && !ownSigner && (renew !== undefined || f.keyed !== undefined);

  // Step 1 and the first half of step 4: the CAs of ca.crt.
  const retiredDue = (c: ParsedCertificate): number | undefined => {
    if (c.fingerprint === signer?.fingerprint || c.fingerprint === issuerOfServed?.fingerprint)
      return undefined;
    if (!external && c.fingerprint === f.keyed?.fingerprint) return undefined;
    if (!served || f.servingSince === undefined) return undefined;
    const trusted = f.trustedSince.get(c.fingerprint);
    if (f.registered && trusted === undefined) return undefined;
    return Math.max(f.servingSince, trusted ?? 0) + policy.overlapMs;
  };
  const kept = f.cas.filter((c) => {
    const due = retiredDue(c);
    return due === undefined || now < due;
  });
  const added: ParsedCertificate[] = [];
  const addOnce = (c: ParsedCertificate | undefined): void => {
    if (c && !kept.some((k) => k.fingerprint === c.fingerprint) && !added.includes(c)) added.push(c);
  };
  if (served) addOnce(issuerOfServed);
  addOnce(external);
  const caCerts = [...kept, ...added];
  const removeKey = f.hasCaKey && !createCa && !caCerts.some((c) => c.fingerprint === f.keyed?.fingerprint);
  const trustedSince = new Map(
    [...f.trustedSince].filter(([fp]) => caCerts.some((c) => c.fingerprint === fp)),
  );
  const annotations = (since: ReadonlyMap<string, number>, servingSince: number | undefined) => ({
    [CA_TRUSTED_SINCE_ANNOTATION]: since.size > 0 ? formatTrustedSince(since) : undefined,
    [SERVING_SINCE_ANNOTATION]: servingSince === undefined ? undefined : new Date(servingSince).toISOString(),
  });
  if (f.caCrtUntidy || kept.length !== f.cas.length || added.length > 0 || createCa || removeKey) {
    const why = [
      ...(createCa
        ? [f.keyed ? 'the signing CA is due for rotation: adding the next CA' : 'no CA can sign: adding one']
        : []),
      ...(added.length > 0 ? ['adding the CA of the issuer or of the served certificate'] : []),
      ...(kept.length !== f.cas.length ? ['removing CAs past their overlap'] : []),
      ...(removeKey ? ['removing a ca.key that belongs to no CA in ca.crt'] : []),
      ...(f.caCrtUntidy ? ['dropping garbage, duplicate and expired entries of ca.crt'] : []),
    ];
    return {
      kind: 'write-secret',
      reason: why.join('; '),
      write: {
        caCerts: caCerts.map((c) => c.pem),
        createCa: createCa ? { lifetimeMs: policy.caLifetimeMs } : undefined,
        caKey: removeKey ? 'remove' : 'keep',
        annotations: annotations(trustedSince, f.servingSince),
      },
    };
  }

  // Trust bookkeeping: since when each CA is in every caBundle (forgotten when it is not).
  const since = new Map<string, number>();
  for (const c of f.cas) {
    const at = f.trustedSince.get(c.fingerprint);
    if (!f.registered) {
      if (at !== undefined) since.set(c.fingerprint, at);
    } else if (f.trusted.has(c.fingerprint)) since.set(c.fingerprint, at ?? now);
  }
  const servingSince = f.servingSince ?? (served ? now : undefined);
  if (!sameMap(since, f.trustedSince) || servingSince !== f.servingSince)
    return {
      kind: 'write-secret',
      reason: 'recording since when each CA is trusted and the certificate served',
      write: {
        caCerts: f.cas.map((c) => c.pem),
        caKey: 'keep',
        annotations: annotations(since, servingSince),
      },
    };

  // Step 2, keeping what another install's Pods may still serve with.
  const ours = new Set(f.cas.map((c) => c.fingerprint));
  const held =
    input.foreignServers === true ? f.bundleCertificates.filter((c) => !ours.has(c.fingerprint)) : [];
  const bundle = [...f.cas, ...held];
  if (f.registered && f.cas.length > 0 && !f.bundlesEqual(new Set(bundle.map((c) => c.fingerprint))))
    return {
      kind: 'write-bundle',
      reason:
        held.length > 0
          ? "the caBundle differs from ca.crt's unexpired CAs plus those Pods we did not start may serve with"
          : "the caBundle differs from ca.crt's unexpired CAs",
      bundle: bundle.map((c) => c.pem).join(''),
    };

  // Step 3.
  if (renew !== undefined) {
    if (!signer)
      return { kind: 'wait', reason: `${renew}; no CA can sign yet`, until: undefined, pending: true };
    if (f.registered) {
      const at = since.get(signer.fingerprint);
      if (at === undefined)
        return {
          kind: 'wait',
          reason: `${renew}; waiting for the caBundle to hold the signing CA`,
          until: undefined,
          pending: true,
        };
      if (now < at + policy.settleMs)
        return {
          kind: 'wait',
          reason: `${renew}; waiting for the API server to load the signing CA`,
          until: at + policy.settleMs,
          pending: true,
        };
    }
    return {
      kind: 'write-secret',
      reason: renew,
      write: {
        caCerts: f.cas.map((c) => c.pem),
        caKey: 'keep',
        issue: {
          signer: signer.fingerprint,
          notAfter: Math.min(now + policy.servingLifetimeMs, signer.notAfter),
        },
        annotations: annotations(since, now),
      },
    };
  }

  // Nothing to do: when to look again.
  const deadlines = [
    renewAt,
    ownSigner ? rotateAt : undefined,
    ...f.cas.map((c) => c.notAfter),
    ...f.cas.map(retiredDue),
  ];
  const next = deadlines.filter((d): d is number => d !== undefined && d > now);
  if (held.length > 0 && f.registered)
    return {
      kind: 'wait',
      reason: `keeping ${held.length} certificate(s) in the caBundle while Pods we did not start may serve with them`,
      until: Math.min(now + policy.settleMs, ...next),
      pending: true,
    };
  return {
    kind: 'wait',
    reason: 'the Secret and the caBundle are current',
    until: next.length > 0 ? Math.min(...next) : undefined,
    pending: false,
  };
}

/**
 * Whether a caBundle holds an unexpired certificate that `ca.crt` does not: only then does the
 * plan need {@link ServingPlanInput.foreignServers}, so a writer can skip looking at the Pods.
 */
export function caBundleHoldsOthers(input: Omit<ServingPlanInput, 'foreignServers'>): boolean {
  const f = readSecretFacts(input.secret, input.bundles, input.dnsNames, input.ipAddresses ?? [], input.now);
  const ours = new Set(f.cas.map((c) => c.fingerprint));
  return f.bundleCertificates.some((c) => !ours.has(c.fingerprint));
}

function externalCa(pem: string, now: number): ParsedCertificate {
  const ca = parseCertificate(pem);
  if (!ca?.isCa) throw new ServingIssuerError("the issuer's CA certificate is not a CA certificate");
  if (ca.notAfter <= now) throw new ServingIssuerError("the issuer's CA certificate has expired");
  return ca;
}

function sameMap(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean {
  return a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
}

/** Re-export for writers that only need the facts (readiness, logs). */
export type { SecretFacts };
