/**
 * A simulated runtime for the serving-certificate plan: the Secret, the caBundle of each webhook
 * entry (with, per CA, since when every entry has held it: what the API server has had), and a
 * manual clock. Writers apply the plan's steps with the real executor.
 */
import type { CertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { parseCertificates } from '../../../src/pki/pem-certificates.js';
import type { ServingPolicy } from '../../../src/serving-cert/serving-policy.js';
import {
  planServingSecret,
  type ServingIssuer,
  type ServingStep,
} from '../../../src/serving-cert/serving-secret-plan.js';
import type { ServingSecretContent } from '../../../src/serving-cert/serving-secret-state.js';
import { executeSecretWrite } from '../../../src/serving-cert/serving-secret-write.js';
import { webhookServiceDnsNames } from '../../../src/api/runtime-names.js';

export const DNS = webhookServiceDnsNames('kyma-system');
export const START = Date.parse('2026-01-01T00:00:00Z');

/** A writer: an issuer with its policy (and, for an external one, its CA with key). */
export interface Writer {
  readonly issuer: ServingIssuer;
  readonly policy: ServingPolicy;
  readonly externalCa?: CertificateAuthority;
}

export class ServingWorld {
  now = START;
  secret: ServingSecretContent | undefined;
  /** caBundle per webhook entry; [] while no configuration registers us. */
  bundles: string[];
  /** Since when every entry holds each CA (the API server's view, loaded at once). */
  readonly bundledSince = new Map<string, number>();
  readonly log: string[] = [];
  writes = 0;
  /** Whether Pods of an install we take over still serve (the plan's `foreignServers`). */
  foreignServers = false;

  constructor(entries = 1) {
    this.bundles = Array.from({ length: entries }, () => '');
  }

  plan(w: Writer): ServingStep {
    return planServingSecret({
      secret: this.secret,
      bundles: this.bundles,
      issuer: w.issuer,
      dnsNames: DNS,
      now: this.now,
      policy: w.policy,
      foreignServers: this.foreignServers,
    });
  }

  /** Applies one step; returns it. */
  async step(w: Writer): Promise<ServingStep> {
    const s = this.plan(w);
    if (s.kind === 'write-secret') {
      this.secret = await executeSecretWrite(this.secret, s.write, {
        now: this.now,
        dnsNames: DNS,
        ...(w.externalCa ? { externalCa: w.externalCa } : {}),
      });
      this.writes++;
    } else if (s.kind === 'write-bundle') {
      this.setBundles(this.bundles.map(() => s.bundle));
      this.writes++;
    }
    this.log.push(`${new Date(this.now).toISOString()} ${s.kind}: ${s.reason}`);
    return s;
  }

  /** Applies steps until the plan waits (at most `limit`); returns the wait. */
  async settle(w: Writer, limit = 12): Promise<Extract<ServingStep, { kind: 'wait' }>> {
    for (let i = 0; i < limit; i++) {
      const s = await this.step(w);
      if (s.kind === 'wait') return s;
    }
    throw new Error(`no wait after ${limit} steps:\n${this.log.slice(-limit).join('\n')}`);
  }

  setBundles(bundles: string[]): void {
    this.bundles = bundles;
    const sets = bundles.map((b) => new Set(parseCertificates(b).certificates.map((c) => c.fingerprint)));
    const all = new Set(sets.flatMap((s) => [...s]));
    for (const fp of all)
      if (sets.every((s) => s.has(fp)) && !this.bundledSince.has(fp)) this.bundledSince.set(fp, this.now);
    for (const fp of [...this.bundledSince.keys()])
      if (!sets.every((s) => s.has(fp))) this.bundledSince.delete(fp);
  }

  /** The served certificate (the Secret's tls.crt) parsed, if any. */
  served() {
    return parseCertificates(this.secret?.tlsCrt).certificates[0];
  }

  /** Fingerprints of ca.crt. */
  caFingerprints(): string[] {
    return parseCertificates(this.secret?.caCrt).certificates.map((c) => c.fingerprint);
  }
}
