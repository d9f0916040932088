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

/** Rotations tried in a row when others keep writing the Secret (each conflict re-reads it). */
const MAX_ROTATION_ATTEMPTS = 3;

/**
 * The controller's CA, kept in a KCP Secret (created on first start, ECDSA). A rotation keeps
 * the previous CA trusted for a grace period, so certificates it issued (webhook serving
 * certificates, drift client certificates) keep working until they are re-issued.
 *
 * Several replicas share the Secret: a rotation writes it only if it is still the version this
 * store read (resourceVersion precondition); a conflict means another replica rotated first, so
 * the store reads theirs and uses it. Each replica follows the Secret ({@link adopt} what its
 * watch shows), so all sign with the same CA; {@link changes} counts changes of the signing CA.
 */
export class CaStore {
  private ca: CertificateAuthority | undefined;
  private previousPem: string | undefined;
  private previousUntil = 0;
  /** The Secret's resourceVersion this store holds (the precondition of its next write). */
  private resourceVersion: string | undefined;
  private changeCount = 0;

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
        const created = await this.core.createNamespacedSecret({
          namespace: this.ref.namespace,
          body: this.toSecret(ca, undefined, 0),
        });
        this.set(ca, undefined, 0, created.metadata?.resourceVersion);
        return;
      } catch (error) {
        if (statusCodeOf(error) !== 409) throw error;
        secret = await this.core.readNamespacedSecret(this.ref);
      }
    }
    await this.fromSecret(secret);
  }

  /**
   * Takes the CA Secret as another replica wrote it (seen on a watch); resolves whether the
   * signing CA changed. The version this store wrote or read already changes nothing.
   */
  async adopt(secret: V1Secret): Promise<boolean> {
    const rv = secret.metadata?.resourceVersion;
    if (rv !== undefined && rv === this.resourceVersion) return false;
    const before = this.ca?.certPem;
    await this.fromSecret(secret);
    return this.ca?.certPem !== before;
  }

  /** How many times the signing CA changed since this store was made (rotated here or adopted). */
  get changes(): number {
    return this.changeCount;
  }

  /** Where the CA is kept. */
  get secret(): CaSecretRef {
    return this.ref;
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

  /**
   * Replaces the CA; the old one stays trusted for `graceMs`. When another replica rotated
   * first, its CA is used instead; resolves `adopted` then.
   */
  async rotate(graceMs: number): Promise<'rotated' | 'adopted'> {
    return this.rotateWhile(() => true, graceMs);
  }

  /**
   * Rotates when the CA is inside its renew-before window (or takes the one another replica
   * rotated to meanwhile); resolves `current` when nothing was due.
   */
  async rotateIfExpiring(renewBeforeMs: number, graceMs: number): Promise<'current' | 'rotated' | 'adopted'> {
    const due = (): boolean => this.current().certificate.notAfter.getTime() - renewBeforeMs <= this.now();
    if (!due()) return 'current';
    return this.rotateWhile(due, graceMs);
  }

  /** Writes a new CA over the version read, re-reading on a conflict, while `due` says so. */
  private async rotateWhile(due: () => boolean, graceMs: number): Promise<'rotated' | 'adopted'> {
    const before = this.current().certPem;
    for (let attempt = 1; ; attempt++) {
      const old = this.current();
      const next = await createCertificateAuthority({ commonName: this.commonName });
      const until = this.now() + graceMs;
      const body = this.toSecret(next, old.certPem, until, this.resourceVersion);
      try {
        const written = await this.core.replaceNamespacedSecret({ ...this.ref, body });
        this.set(next, old.certPem, until, written.metadata?.resourceVersion);
        return 'rotated';
      } catch (error) {
        if (statusCodeOf(error) !== 409 || attempt >= MAX_ROTATION_ATTEMPTS) throw error;
      }
      // Written since we read it: another replica's rotation (use it), or a change that left the CA.
      await this.fromSecret(await this.core.readNamespacedSecret(this.ref));
      if (this.current().certPem !== before || !due()) return 'adopted';
    }
  }

  private set(
    ca: CertificateAuthority,
    previousPem: string | undefined,
    until: number,
    resourceVersion: string | undefined,
  ): void {
    if (ca.certPem !== this.ca?.certPem) this.changeCount++;
    this.ca = ca;
    this.previousPem = previousPem;
    this.previousUntil = until;
    this.resourceVersion = resourceVersion;
  }

  private async fromSecret(secret: V1Secret): Promise<void> {
    const d = secret.data ?? {};
    const cert = unb64(d['tls.crt']);
    const key = unb64(d['tls.key']);
    if (!cert || !key)
      throw new Error(`CA Secret ${this.ref.namespace}/${this.ref.name} lacks tls.crt or tls.key`);
    const until = Date.parse(secret.metadata?.annotations?.[PREVIOUS_CA_UNTIL] ?? '');
    // The same CA as held: keep its parsed form (loading costs a key import).
    const ca = cert === this.ca?.certPem ? this.ca : await loadCertificateAuthority(cert, key);
    this.set(
      ca,
      unb64(d['previous.crt']),
      Number.isFinite(until) ? until : 0,
      secret.metadata?.resourceVersion,
    );
  }

  private toSecret(
    ca: CertificateAuthority,
    previousPem: string | undefined,
    until: number,
    resourceVersion?: string,
  ): V1Secret {
    return {
      metadata: {
        name: this.ref.name,
        namespace: this.ref.namespace,
        resourceVersion,
        labels: { 'app.kubernetes.io/managed-by': 'rt-bootstrapper' },
        annotations: previousPem ? { [PREVIOUS_CA_UNTIL]: new Date(until).toISOString() } : undefined,
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
