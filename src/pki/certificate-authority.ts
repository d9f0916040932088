import {
  PkiError,
  type CryptoKey,
  ecdsaP256,
  exportPrivateKeyPem,
  generateKeyPair,
  importPrivateKeyPem,
  webcrypto,
  x509,
} from './crypto-provider.js';
import { CLOCK_SKEW_MS } from './clock-skew.js';
import { certificateFromPem } from './certificate-from-pem.js';

/** A CA that can sign certificates: its certificate and its signing key. */
export interface CertificateAuthority {
  readonly certificate: x509.X509Certificate;
  readonly certPem: string;
  readonly keyPem: string;
  readonly signingKey: CryptoKey;
}

/** Options for a new self-signed CA. */
export interface CreateCaOptions {
  commonName: string;
  /** Validity in milliseconds from now (default 10 years). */
  validityMs?: number;
  now?: Date;
}

const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000;

/** Creates a self-signed ECDSA P-256 CA. */
export async function createCertificateAuthority(options: CreateCaOptions): Promise<CertificateAuthority> {
  const now = options.now ?? new Date();
  const keys = await generateKeyPair();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    name: [{ CN: [options.commonName] }],
    keys,
    signingAlgorithm: ecdsaP256,
    serialNumber: randomSerial(),
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    notAfter: new Date(now.getTime() + (options.validityMs ?? TEN_YEARS_MS)),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return {
    certificate,
    certPem: certificate.toString('pem') + '\n',
    keyPem: await exportPrivateKeyPem(keys.privateKey),
    signingKey: keys.privateKey,
  };
}

/** Loads a CA from PEM (for example from a Secret); refuses a certificate that is not a CA. */
export async function loadCertificateAuthority(
  certPem: string,
  keyPem: string,
): Promise<CertificateAuthority> {
  let certificate: x509.X509Certificate;
  try {
    certificate = certificateFromPem(certPem);
  } catch (cause) {
    throw new PkiError('cannot parse the CA certificate', { cause });
  }
  const constraints = certificate.getExtension(x509.BasicConstraintsExtension);
  if (!constraints?.ca) throw new PkiError(`certificate ${certificate.subject} is not a CA`);
  const signingKey = await importPrivateKeyPem(keyPem);
  return { certificate, certPem, keyPem, signingKey };
}

/** A random positive 128-bit serial number in hex, as RFC 5280 asks (at most 20 octets, positive). */
export function randomSerial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return Buffer.from(bytes).toString('hex');
}
