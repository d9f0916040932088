/**
 * What the serving-certificate protocol reads from the Secret and the caBundles, as facts: the
 * valid CAs of `ca.crt`, which one `ca.key` belongs to, the serving certificate and what is wrong
 * with it, which CAs every caBundle holds, and the protocol's timestamps. Pure; garbage anywhere
 * reads as absent.
 */
import type { KeyObject } from 'node:crypto';
import { CLOCK_SKEW_MS } from '../pki/clock-skew.js';
import {
  coversNames,
  issuedBy,
  keyMatches,
  parseCertificates,
  parsePrivateKey,
  type ParsedCertificate,
} from '../pki/pem-certificates.js';
import { CA_TRUSTED_SINCE_ANNOTATION, SERVING_SINCE_ANNOTATION } from './serving-policy.js';

/** The Secret's keys, decoded (any may be missing or garbage). */
export interface ServingSecretContent {
  readonly tlsCrt?: string | undefined;
  readonly tlsKey?: string | undefined;
  readonly caCrt?: string | undefined;
  readonly caKey?: string | undefined;
  readonly annotations?: Readonly<Record<string, string>> | undefined;
}

/** The serving certificate, read. */
export type ServingFacts =
  | { readonly ok: false; readonly problem: string; readonly leaf?: ParsedCertificate }
  | {
      readonly ok: true;
      readonly leaf: ParsedCertificate;
      /** The CA that signed it, from `ca.crt` or else from the caBundle; undefined if neither has it. */
      readonly issuer: ParsedCertificate | undefined;
    };

/** Everything the plan decides on. */
export interface SecretFacts {
  /** Unexpired CA certificates of `ca.crt`, de-duplicated, in order. */
  readonly cas: readonly ParsedCertificate[];
  /** `ca.crt` holds something besides {@link cas} (garbage, duplicates, expired or non-CA certificates). */
  readonly caCrtUntidy: boolean;
  readonly caKey: KeyObject | undefined;
  /** Whether the Secret has a `ca.key` at all. */
  readonly hasCaKey: boolean;
  /** The CA of {@link cas} that `ca.key` belongs to. */
  readonly keyed: ParsedCertificate | undefined;
  readonly serving: ServingFacts;
  /** Whether any webhook entry of our configurations exists (someone calls us). */
  readonly registered: boolean;
  /** Fingerprints held by every entry's caBundle. */
  readonly trusted: ReadonlySet<string>;
  /** Unexpired certificates of any entry's caBundle, de-duplicated, in order. */
  readonly bundleCertificates: readonly ParsedCertificate[];
  /** Whether every entry's caBundle holds exactly these fingerprints and nothing else. */
  bundlesEqual(fingerprints: ReadonlySet<string>): boolean;
  /** From the annotation: since when each CA was seen in every caBundle. */
  readonly trustedSince: ReadonlyMap<string, number>;
  /** From the annotation: when `tls.crt` was written. */
  readonly servingSince: number | undefined;
}

/** When a certificate's life really began: its notBefore less our back-dating, within its validity. */
export function lifeStart(c: ParsedCertificate): number {
  return Math.min(c.notBefore + CLOCK_SKEW_MS, c.notAfter);
}

/** Reads the Secret (undefined: none) and the caBundle of every webhook entry of our configurations. */
export function readSecretFacts(
  secret: ServingSecretContent | undefined,
  bundles: readonly string[],
  dnsNames: readonly string[],
  ipAddresses: readonly string[],
  now: number,
): SecretFacts {
  const caText = parseCertificates(secret?.caCrt);
  const cas: ParsedCertificate[] = [];
  for (const c of caText.certificates)
    if (c.isCa && c.notAfter > now && !cas.some((k) => k.fingerprint === c.fingerprint)) cas.push(c);
  const caKey = parsePrivateKey(secret?.caKey);
  const parsedBundles = bundles.map((b) => parseCertificates(b));
  const sets = parsedBundles.map((b) => new Set(b.certificates.map((c) => c.fingerprint)));
  const trusted = new Set(sets[0] ?? []);
  for (const s of sets.slice(1)) for (const f of trusted) if (!s.has(f)) trusted.delete(f);
  const bundleCertificates: ParsedCertificate[] = [];
  for (const c of parsedBundles.flatMap((b) => b.certificates))
    if (c.notAfter > now && !bundleCertificates.some((k) => k.fingerprint === c.fingerprint))
      bundleCertificates.push(c);
  const bundleCas = bundleCertificates.filter((c) => c.isCa);
  const annotations = secret?.annotations ?? {};
  const servingSince = Date.parse(annotations[SERVING_SINCE_ANNOTATION] ?? '');
  return {
    cas,
    caCrtUntidy: caText.garbage || cas.length !== caText.certificates.length,
    caKey,
    hasCaKey: secret?.caKey !== undefined,
    keyed: cas.find((c) => keyMatches(c, caKey)),
    serving: readServing(secret, [...cas, ...bundleCas], dnsNames, ipAddresses, now),
    registered: bundles.length > 0,
    trusted,
    bundleCertificates,
    bundlesEqual: (fingerprints) =>
      parsedBundles.every(
        (b, i) =>
          !b.garbage &&
          b.certificates.length === fingerprints.size &&
          [...fingerprints].every((f) => sets[i]?.has(f) === true),
      ),
    trustedSince: readTrustedSince(annotations[CA_TRUSTED_SINCE_ANNOTATION]),
    servingSince: Number.isFinite(servingSince) ? servingSince : undefined,
  };
}

function readServing(
  secret: ServingSecretContent | undefined,
  candidates: readonly ParsedCertificate[],
  dnsNames: readonly string[],
  ipAddresses: readonly string[],
  now: number,
): ServingFacts {
  if (secret?.tlsCrt === undefined || secret.tlsCrt.trim() === '')
    return { ok: false, problem: 'there is no serving certificate' };
  const leaf = parseCertificates(secret.tlsCrt).certificates[0];
  if (!leaf) return { ok: false, problem: 'tls.crt is not a certificate' };
  if (leaf.isCa) return { ok: false, problem: 'tls.crt is a CA certificate', leaf };
  if (!keyMatches(leaf, parsePrivateKey(secret.tlsKey)))
    return { ok: false, problem: 'tls.key is not the key of tls.crt', leaf };
  if (!(leaf.notBefore <= now && now < leaf.notAfter))
    return { ok: false, problem: 'the serving certificate is expired or not yet valid', leaf };
  if (!coversNames(leaf, dnsNames, ipAddresses))
    return { ok: false, problem: "the serving certificate does not cover the Service's names", leaf };
  return { ok: true, leaf, issuer: candidates.find((ca) => issuedBy(leaf, ca)) };
}

function readTrustedSince(text: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (text === undefined) return out;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return out;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return out;
  for (const [fingerprint, at] of Object.entries(parsed)) {
    const ms = typeof at === 'string' ? Date.parse(at) : Number.NaN;
    if (/^[0-9a-f]{64}$/.test(fingerprint) && Number.isFinite(ms)) out.set(fingerprint, ms);
  }
  return out;
}

/** The annotation value for a trusted-since map (sorted, so equal maps write equal text). */
export function formatTrustedSince(map: ReadonlyMap<string, number>): string {
  const entries = [...map].sort(([a], [b]) => a.localeCompare(b));
  return JSON.stringify(Object.fromEntries(entries.map(([f, ms]) => [f, new Date(ms).toISOString()])));
}
