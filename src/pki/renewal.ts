import type { X509Certificate } from 'node:crypto';
import { parseCertificate, parseCertificates } from './pem-certificates.js';

/** Whom a leaf certificate must name to be kept: its subject CN and one DNS name of its SAN. */
export interface LeafIdentity {
  readonly commonName: string;
  readonly dnsName: string;
}

/**
 * Whether a certificate must be (re)issued: absent, unparseable, naming another identity, inside
 * its renew-before window, or not issued by the CA of `caPem` (pure apart from the clock passed
 * in). Node's own X509 parser reads it once (memoised by its text); the signature, the costly
 * check, comes last, so a certificate of another identity (a runtime rebuilt under a new ID)
 * costs no verification.
 */
export function needsRenewal(
  certPem: string | undefined,
  caPem: string,
  now: Date,
  renewBeforeMs: number,
  identity?: LeafIdentity,
): boolean {
  const leaf = parseCertificates(certPem).certificates[0];
  const ca = parseCertificate(caPem);
  if (leaf === undefined || ca === undefined) return true;
  if (identity !== undefined && !names(leaf.x509, identity)) return true;
  if (leaf.notAfter - renewBeforeMs <= now.getTime()) return true;
  try {
    return !(leaf.x509.checkIssued(ca.x509) && leaf.x509.verify(ca.x509.publicKey));
  } catch {
    return true;
  }
}

/** The subject's CN is exactly `commonName` (a DNS label: nothing to escape) and the SAN has `dnsName`. */
function names(cert: X509Certificate, identity: LeafIdentity): boolean {
  if (!cert.subject.split('\n').includes(`CN=${identity.commonName}`)) return false;
  return cert.checkHost(identity.dnsName, { subject: 'never', wildcards: false }) !== undefined;
}
