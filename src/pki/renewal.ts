import type { CertificateAuthority } from './certificate-authority.js';
import { x509 } from './crypto-provider.js';
import { certificateFromPem } from './certificate-from-pem.js';

/**
 * Whether a certificate must be (re)issued: absent, unparseable, not issued by `ca`, or
 * inside its renew-before window (pure apart from the clock passed in).
 */
export async function needsRenewal(
  certPem: string | undefined,
  ca: CertificateAuthority,
  now: Date,
  renewBeforeMs: number,
): Promise<boolean> {
  if (!certPem) return true;
  let cert: x509.X509Certificate;
  try {
    cert = certificateFromPem(certPem);
  } catch {
    return true;
  }
  if (cert.issuer !== ca.certificate.subject) return true;
  if (cert.notAfter.getTime() - renewBeforeMs <= now.getTime()) return true;
  try {
    return !(await cert.verify({ publicKey: ca.certificate.publicKey, signatureOnly: true }));
  } catch {
    return true;
  }
}
