/**
 * Carries out a {@link SecretWrite} of the serving-certificate plan: creates the CA or issues the
 * certificate it asks for and returns the Secret's new content. No Kubernetes I/O; the caller
 * writes the result (with the resourceVersion it planned from).
 */
import {
  createCertificateAuthority,
  loadCertificateAuthority,
  type CertificateAuthority,
} from '../pki/certificate-authority.js';
import { PkiError } from '../pki/crypto-provider.js';
import { issueCertificate } from '../pki/issue-certificate.js';
import { parseCertificate, parseCertificates } from '../pki/pem-certificates.js';
import type { ProtocolAnnotation, SecretWrite } from './serving-secret-plan.js';
import type { ServingSecretContent } from './serving-secret-state.js';
import { CA_TRUSTED_SINCE_ANNOTATION, SERVING_SINCE_ANNOTATION } from './serving-policy.js';

/** What a write needs besides the plan's step. */
export interface SecretWriteContext {
  readonly now: number;
  readonly dnsNames: readonly string[];
  readonly ipAddresses?: readonly string[];
  /** The external issuer's CA (direct mode); without it, the signer is the CA that `ca.key` belongs to. */
  readonly externalCa?: CertificateAuthority;
  /** Common name of a CA the write creates. */
  readonly caCommonName?: string;
}

const OURS: readonly ProtocolAnnotation[] = [CA_TRUSTED_SINCE_ANNOTATION, SERVING_SINCE_ANNOTATION];

/** The Secret's content after `write`; other annotations of `current` are kept. */
export async function executeSecretWrite(
  current: ServingSecretContent | undefined,
  write: SecretWrite,
  ctx: SecretWriteContext,
): Promise<ServingSecretContent> {
  const caCerts = [...write.caCerts];
  let caKey = write.caKey === 'remove' ? undefined : current?.caKey;
  if (write.createCa) {
    const ca = await createCertificateAuthority({
      commonName: ctx.caCommonName ?? 'rt-bootstrapper webhook CA',
      validityMs: write.createCa.lifetimeMs,
      now: new Date(ctx.now),
    });
    caCerts.push(ca.certPem);
    caKey = ca.keyPem;
  }
  let tlsCrt = current?.tlsCrt;
  let tlsKey = current?.tlsKey;
  if (write.issue) {
    const signer = await signerOf(write.issue.signer, caCerts.join(''), caKey, ctx.externalCa);
    const issued = await issueCertificate(signer, {
      commonName: ctx.dnsNames[0] ?? 'rt-bootstrapper-webhook',
      dnsNames: ctx.dnsNames,
      ipAddresses: ctx.ipAddresses ?? [],
      usage: 'server',
      validityMs: Math.max(1000, write.issue.notAfter - ctx.now),
      now: new Date(ctx.now),
    });
    tlsCrt = issued.certPem;
    tlsKey = issued.keyPem;
  }
  const annotations: Record<string, string> = Object.fromEntries(
    Object.entries(current?.annotations ?? {}).filter(([k]) => !(OURS as readonly string[]).includes(k)),
  );
  for (const key of OURS) {
    const value = write.annotations[key];
    if (value !== undefined) annotations[key] = value;
  }
  return {
    tlsCrt,
    tlsKey,
    caCrt: caCerts.join(''),
    caKey,
    annotations,
  };
}

async function signerOf(
  fingerprint: string,
  caCrt: string,
  caKey: string | undefined,
  external: CertificateAuthority | undefined,
): Promise<CertificateAuthority> {
  if (external && parseCertificate(external.certPem)?.fingerprint === fingerprint) return external;
  const cert = parseCertificates(caCrt).certificates.find((c) => c.fingerprint === fingerprint);
  if (!cert || caKey === undefined)
    throw new PkiError(`the signing CA ${fingerprint.slice(0, 16)}… or its key is not in the Secret`);
  return await loadCertificateAuthority(cert.pem, caKey);
}
