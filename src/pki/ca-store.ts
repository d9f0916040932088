import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { statusCodeOf } from '../kube/kube-errors.js';
import {
  createCertificateAuthority,
  loadCertificateAuthority,
  type CertificateAuthority,
} from './certificate-authority.js';

/** Annotation on the CA Secret: until when the previous CA stays trusted after a rotation. */
export const PREVIOUS_CA_UNTIL = 'rt-bootstrapper.kyma-project.io/previous-ca-until';

/** Where the controller keeps its CA on the KCP. */
export interface CaSecretRef {
  readonly namespace: string;
  readonly name: string;
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined): string | undefined =>
  s ? Buffer.from(s, 'base64').toString() : undefined;

/**
 * The controller's CA, kept in a KCP Secret (created on first start, ECDSA). A rotation keeps
 * the previous CA trusted for a grace period, so certificates it issued (webhook serving
 * certificates, drift client certificates) keep working until they are re-issued.
 */
export class CaStore {
  private ca: CertificateAuthority | undefined;
  private previousPem: string | undefined;
  private previousUntil = 0;

  constructor(
    private readonly core: CoreV1Api,
    private readonly ref: CaSecretRef,
    private readonly commonName = 'rt-bootstrapper CA',
    private readonly now: () => number = Date.now,
  ) {}

  /** Loads the CA, creating it on first start; two replicas racing end with the one stored first. */
  async load(): Promise<void> {
    let secret: V1Secret | undefined;
    try {
      secret = await this.core.readNamespacedSecret(this.ref);
    } catch (error) {
      if (statusCodeOf(error) !== 404) throw error;
    }
    if (!secret) {
      const ca = await createCertificateAuthority({ commonName: this.commonName });
      try {
        await this.core.createNamespacedSecret({
          namespace: this.ref.namespace,
          body: this.toSecret(ca, undefined, 0),
        });
      } catch (error) {
        if (statusCodeOf(error) !== 409) throw error;
        secret = await this.core.readNamespacedSecret(this.ref);
      }
      if (!secret) {
        this.set(ca, undefined, 0);
        return;
      }
    }
    await this.fromSecret(secret);
  }

  /** The CA that signs new certificates. */
  current(): CertificateAuthority {
    if (!this.ca) throw new Error('the CA is not loaded');
    return this.ca;
  }

  /** PEMs of every CA to trust now: the current one and, during the grace period, the previous. */
  trusted(): string[] {
    const list = [this.current().certPem];
    if (this.previousPem && this.now() < this.previousUntil) list.push(this.previousPem);
    return list;
  }

  /** The trusted CAs as one PEM bundle (for caBundle fields and ca.crt keys). */
  trustBundle(): string {
    return this.trusted()
      .map((p) => p.trim())
      .join('\n')
      .concat('\n');
  }

  /** Replaces the CA; the old one stays trusted for `graceMs`. */
  async rotate(graceMs: number): Promise<void> {
    const old = this.current();
    const next = await createCertificateAuthority({ commonName: this.commonName });
    const until = this.now() + graceMs;
    await this.core.replaceNamespacedSecret({ ...this.ref, body: this.toSecret(next, old.certPem, until) });
    this.set(next, old.certPem, until);
  }

  /** Rotates when the CA is inside its renew-before window; resolves whether it did. */
  async rotateIfExpiring(renewBeforeMs: number, graceMs: number): Promise<boolean> {
    if (this.current().certificate.notAfter.getTime() - renewBeforeMs > this.now()) return false;
    await this.rotate(graceMs);
    return true;
  }

  private set(ca: CertificateAuthority, previousPem: string | undefined, until: number): void {
    this.ca = ca;
    this.previousPem = previousPem;
    this.previousUntil = until;
  }

  private async fromSecret(secret: V1Secret): Promise<void> {
    const d = secret.data ?? {};
    const cert = unb64(d['tls.crt']);
    const key = unb64(d['tls.key']);
    if (!cert || !key)
      throw new Error(`CA Secret ${this.ref.namespace}/${this.ref.name} lacks tls.crt or tls.key`);
    const until = Date.parse(secret.metadata?.annotations?.[PREVIOUS_CA_UNTIL] ?? '');
    this.set(
      await loadCertificateAuthority(cert, key),
      unb64(d['previous.crt']),
      Number.isFinite(until) ? until : 0,
    );
  }

  private toSecret(ca: CertificateAuthority, previousPem: string | undefined, until: number): V1Secret {
    return {
      metadata: {
        name: this.ref.name,
        namespace: this.ref.namespace,
        labels: { 'app.kubernetes.io/managed-by': 'rt-bootstrapper' },
        ...(previousPem ? { annotations: { [PREVIOUS_CA_UNTIL]: new Date(until).toISOString() } } : {}),
      },
      type: 'Opaque',
      data: {
        'tls.crt': b64(ca.certPem),
        'tls.key': b64(ca.keyPem),
        ...(previousPem ? { 'previous.crt': b64(previousPem) } : {}),
      },
    };
  }
}
