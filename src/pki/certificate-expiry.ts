/**
 * When certificates expire, read from PEM text (pure). Expiry metrics report these instants as
 * cert-manager does (`…_expiration_timestamp_seconds`).
 */
import { parseCertificates } from './pem-certificates.js';

/** PEM text as a TLS context takes it (`cert` of `tls.SecureContextOptions`). */
export type PemInput = string | Buffer | readonly (string | Buffer)[] | undefined;

/** notAfter (epoch ms) of the first certificate in `pem` (a chain's leaf); undefined when none parses. */
export function leafNotAfter(pem: PemInput): number | undefined {
  const first = Array.isArray(pem)
    ? (pem as readonly (string | Buffer)[])[0]
    : (pem as string | Buffer | undefined);
  const text = typeof first === 'string' || first === undefined ? first : first.toString('utf8');
  return parseCertificates(text).certificates[0]?.notAfter;
}

/** The earliest notAfter (epoch ms) among the certificates in `pem` (a bundle); undefined when none parses. */
export function earliestNotAfter(pem: string | undefined): number | undefined {
  let earliest: number | undefined;
  for (const c of parseCertificates(pem).certificates)
    if (earliest === undefined || c.notAfter < earliest) earliest = c.notAfter;
  return earliest;
}
