/**
 * The webhook's serving certificate as one part: the files it was given (re-read when they
 * change, ./certificate-reloader.ts), or its own kept in a Secret (../serving-cert/). Started
 * first, so a webhook with nothing to serve fails before it starts any watch; the server reads
 * {@link ServingCertificate.current} when it starts and follows every later swap.
 */
import type { SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { leafNotAfter } from '../pki/certificate-expiry.js';
import type { Part } from '../process/part-group.js';
import type { ServingCertKeeper } from '../serving-cert/serving-cert-keeper.js';
import type { ServingCertSettings } from '../serving-cert/serving-cert-settings.js';
import { errorLine } from '../telemetry/error-line.js';
import { CertificateReloader, type CertificateFiles } from './certificate-reloader.js';
import type { WebhookMetrics } from './webhook-metrics.js';

/** Where the certificate comes from, and what it tells. */
export interface ServingCertificateOptions {
  readonly access: ClusterAccess;
  /** Serve these files; without them the webhook keeps its own ({@link servingCert}). */
  readonly tls: CertificateFiles | undefined;
  readonly servingCert: ServingCertSettings | undefined;
  readonly metrics: WebhookMetrics;
  readonly logger: Logger;
}

/** The certificate the server serves; see the file comment. */
export class ServingCertificate implements Part {
  readonly name = 'serving certificate';
  private latest: SecureContextOptions | undefined;
  private apply: ((tls: SecureContextOptions) => void) | undefined;
  private reloader: CertificateReloader | undefined;
  private keeper: ServingCertKeeper | undefined;

  constructor(private readonly o: ServingCertificateOptions) {}

  async start(): Promise<void> {
    const { o } = this;
    const reloaded = (result: 'success' | 'failure'): void => {
      o.metrics.certReloads.inc({ result });
    };
    if (o.tls) {
      const files = o.tls;
      const reloader = new CertificateReloader(
        files,
        (tls) => {
          this.swap(tls);
        },
        reloaded,
        o.logger.child({ part: 'tls' }),
      );
      try {
        this.served(await reloader.load());
      } catch (cause) {
        throw new Error(
          `serving certificate ${files.certFile} with key ${files.keyFile}: ${errorLine(cause)}`,
          {
            cause,
          },
        );
      }
      reloader.start();
      this.reloader = reloader;
      return;
    }
    // Loaded only here: it brings the certificate-issuing code, which file mode never needs.
    const { startKeeperFromSettings } = await import('../serving-cert/serving-cert-settings.js');
    const keeper = await startKeeperFromSettings(o.access, o.servingCert ?? {}, o.logger, reloaded);
    this.keeper = keeper;
    keeper.attach((tls) => {
      this.swap(tls);
    });
    this.served(keeper.initialTls);
  }

  async stop(): Promise<void> {
    this.reloader?.stop();
    await this.keeper?.stop();
  }

  /** The certificate in force (after {@link start}). */
  current(): SecureContextOptions {
    if (this.latest === undefined) throw new Error('the serving certificate is not loaded yet');
    return this.latest;
  }

  /** Where later certificates go (the server's, once it serves). */
  follow(apply: (tls: SecureContextOptions) => void): void {
    this.apply = apply;
  }

  /** Whether the certificate is one the API server trusts (always with files). */
  ready(): boolean {
    return this.keeper?.ready() ?? true;
  }

  /** Whether this replica writes the own certificate now (never with files). */
  isWriter(): boolean {
    return this.keeper?.isWriter() ?? false;
  }

  private served(tls: SecureContextOptions): void {
    this.latest = tls;
    const notAfter = leafNotAfter(tls.cert);
    if (notAfter !== undefined) this.o.metrics.servingCertificateExpiry.set(notAfter / 1000);
  }

  private swap(tls: SecureContextOptions): void {
    this.served(tls);
    this.apply?.(tls);
  }
}
