import { randomSerial, type CertificateAuthority } from './certificate-authority.js';
import { CLOCK_SKEW_MS } from './clock-skew.js';
import { ecdsaP256, exportPrivateKeyPem, generateKeyPair, x509 } from './crypto-provider.js';

/** What a certificate is for; decides its extended key usage. */
export type CertificateUsage = 'server' | 'client' | 'server-and-client';

/** Options for a leaf certificate. */
export interface IssueOptions {
  commonName: string;
  /** Subject organisations (Kubernetes reads them as groups, e.g. `system:masters`). */
  organizations?: readonly string[];
  dnsNames?: readonly string[];
  ipAddresses?: readonly string[];
  usage: CertificateUsage;
  /** Validity in milliseconds from now (default one year). */
  validityMs?: number;
  now?: Date;
}

/** A leaf certificate with its private key, both PEM. */
export interface IssuedCertificate {
  readonly certificate: x509.X509Certificate;
  readonly certPem: string;
  readonly keyPem: string;
}

const ONE_YEAR_MS = 365 * 24 * 3600 * 1000;

/** Issues an ECDSA P-256 leaf certificate signed by the CA. */
export async function issueCertificate(
  ca: CertificateAuthority,
  options: IssueOptions,
): Promise<IssuedCertificate> {
  const now = options.now ?? new Date();
  const keys = await generateKeyPair();
  const usages: string[] = [];
  if (options.usage !== 'client') usages.push(x509.ExtendedKeyUsage.serverAuth);
  if (options.usage !== 'server') usages.push(x509.ExtendedKeyUsage.clientAuth);
  const names: x509.JsonGeneralNames = [
    ...(options.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(options.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension(usages, false),
    await x509.AuthorityKeyIdentifierExtension.create(ca.certificate, false),
  ];
  if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names, false));
  const subject: x509.JsonName = [{ CN: [options.commonName] }];
  for (const o of options.organizations ?? []) subject.push({ O: [o] });
  const certificate = await x509.X509CertificateGenerator.create({
    subject,
    issuer: ca.certificate.subjectName,
    publicKey: keys.publicKey,
    signingKey: ca.signingKey,
    signingAlgorithm: ecdsaP256,
    serialNumber: randomSerial(),
    notBefore: new Date(now.getTime() - CLOCK_SKEW_MS),
    notAfter: new Date(now.getTime() + (options.validityMs ?? ONE_YEAR_MS)),
    extensions,
  });
  return {
    certificate,
    certPem: certificate.toString('pem') + '\n',
    keyPem: await exportPrivateKeyPem(keys.privateKey),
  };
}
