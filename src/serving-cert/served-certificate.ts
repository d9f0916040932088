/**
 * What one replica serves: the certificate and key of the serving Secret, handed to the HTTPS
 * server as a new secure context whenever the Secret brings a new usable pair (new connections
 * use it, open ones finish on the old one). Until the Secret has one, a throwaway self-signed
 * placeholder keeps the port (and the kubelet's probes) up; readiness stays false meanwhile.
 */
import { createHash } from 'node:crypto';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import { createCertificateAuthority } from '../pki/certificate-authority.js';
import { issueCertificate } from '../pki/issue-certificate.js';
import { issuedBy, parseCertificates, type ParsedCertificate } from '../pki/pem-certificates.js';
import type { ServingSecretContent } from './serving-secret-state.js';

/** Serves the Secret's pair; see the file comment. */
export class ServedCertificate {
  private current: ParsedCertificate | undefined;
  private digest = '';
  private rejected = '';
  private apply: ((tls: SecureContextOptions) => void) | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly onResult: (result: 'success' | 'failure') => void = () => undefined,
  ) {}

  /** The material to start the server with: the Secret's pair if usable, else a placeholder. */
  async initial(secret: ServingSecretContent | undefined): Promise<SecureContextOptions> {
    const material = usable(secret);
    if (material) {
      this.take(material);
      return material.tls;
    }
    this.logger.info('no usable serving certificate in the Secret yet; serving a placeholder');
    const ca = await createCertificateAuthority({ commonName: 'rt-bootstrapper placeholder' });
    const leaf = await issueCertificate(ca, {
      commonName: 'rt-bootstrapper placeholder (not ready)',
      usage: 'server',
      validityMs: 365 * 24 * 3600_000,
    });
    return { cert: leaf.certPem, key: leaf.keyPem };
  }

  /** Where new material goes (the server's `setSecureContext`). */
  attach(apply: (tls: SecureContextOptions) => void): void {
    this.apply = apply;
  }

  /** The Secret changed: serve its pair if it is new and usable; otherwise keep the current one. */
  offer(secret: ServingSecretContent | undefined): void {
    const material = usable(secret);
    if (!material) {
      const d = digestOf(secret?.tlsCrt ?? '', secret?.tlsKey ?? '');
      if (secret?.tlsCrt && d !== this.rejected && d !== this.digest) {
        this.rejected = d;
        this.onResult('failure');
        this.logger.warn('the Secret’s tls.crt and tls.key are not a usable pair; keeping the served one');
      }
      return;
    }
    if (material.digest === this.digest) return;
    try {
      this.apply?.(material.tls);
    } catch (err) {
      this.onResult('failure');
      this.logger.warn({ err }, 'cannot serve the new certificate; keeping the served one');
      return;
    }
    this.take(material);
    this.onResult('success');
    this.logger.info(
      { notAfter: new Date(material.leaf.notAfter).toISOString() },
      'serving the certificate from the Secret',
    );
  }

  /** The certificate served now, when it came from the Secret. */
  leaf(): ParsedCertificate | undefined {
    return this.current;
  }

  private take(material: Material): void {
    this.current = material.leaf;
    this.digest = material.digest;
  }
}

interface Material {
  readonly tls: SecureContextOptions;
  readonly leaf: ParsedCertificate;
  readonly digest: string;
}

function usable(secret: ServingSecretContent | undefined): Material | undefined {
  const cert = secret?.tlsCrt;
  const key = secret?.tlsKey;
  if (!cert || !key) return undefined;
  const leaf = parseCertificates(cert).certificates[0];
  if (!leaf) return undefined;
  const tls = { cert, key };
  try {
    createSecureContext(tls); // the key must fit the certificate
  } catch {
    return undefined;
  }
  return { tls, leaf, digest: digestOf(cert, key) };
}

function digestOf(cert: string, key: string): string {
  return createHash('sha256').update(cert).update('\0').update(key).digest('hex');
}

/**
 * Whether `leaf` would be accepted by the API server for every webhook entry: it is valid now
 * and each entry's caBundle holds an unexpired CA that signed it. No entries: nobody calls us.
 */
export function trustedByEveryEntry(
  leaf: ParsedCertificate,
  bundles: readonly string[],
  now: number,
): boolean {
  if (!(leaf.notBefore <= now && now < leaf.notAfter)) return false;
  return bundles.every((b) =>
    parseCertificates(b).certificates.some((ca) => ca.notAfter > now && issuedBy(leaf, ca)),
  );
}
