/** CAs and webhook serving certificates valid from a given time, as the serving-Secret tests issue them. */
import {
  createCertificateAuthority,
  type CertificateAuthority,
} from '../../../src/pki/certificate-authority.js';
import { issueCertificate, type IssuedCertificate } from '../../../src/pki/issue-certificate.js';
import { DNS } from './serving-world.js';

/** A CA named `commonName`, valid from `from` (ms) for `validityMs`. */
export const caFrom = (commonName: string, from: number, validityMs: number): Promise<CertificateAuthority> =>
  createCertificateAuthority({ commonName, now: new Date(from), validityMs });

/** The webhook's serving certificate by `ca` for `dnsNames`, valid from `from` (ms) for `validityMs`. */
export const servingLeaf = (
  ca: CertificateAuthority,
  from: number,
  validityMs: number,
  dnsNames: string[] = DNS,
): Promise<IssuedCertificate> =>
  issueCertificate(ca, { commonName: 'webhook', dnsNames, usage: 'server', now: new Date(from), validityMs });
