import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import type { Logger } from 'pino';

/** Paths of the serving certificate and key (PEM), as mounted from a Secret. */
export interface CertificateFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

/**
 * Re-reads the serving certificate and key when their files change and hands a new secure
 * context to the server: new connections use it, open ones finish on the old one, so no
 * request is dropped. Secret volumes swap a symlink, so the folder is watched, with a slow
 * poll as the fallback for file systems without change events.
 */
export class CertificateReloader {
  private watchers: FSWatcher[] = [];
  private poll: NodeJS.Timeout | undefined;
  private lastDigest = '';
  private pending: Promise<void> = Promise.resolve();

  constructor(
    private readonly files: CertificateFiles,
    private readonly apply: (ctx: SecureContextOptions) => void,
    private readonly onResult: (result: 'success' | 'failure', error?: unknown) => void,
    private readonly logger: Logger,
    private readonly pollMs = 10_000,
  ) {}

  /** Reads the files once; throws if they are unusable (the server cannot start without them). */
  async load(): Promise<SecureContextOptions> {
    const material = await this.read();
    createSecureContext(material); // validates that the key matches the certificate
    this.lastDigest = digest(material);
    return material;
  }

  /** Starts watching for changes. */
  start(): void {
    const dirs = new Set([dirname(this.files.certFile), dirname(this.files.keyFile)]);
    for (const dir of dirs) {
      try {
        const w = watch(dir, () => {
          this.schedule();
        });
        w.on('error', () => undefined);
        w.unref();
        this.watchers.push(w);
      } catch (error) {
        this.logger.warn({ err: error, dir }, 'cannot watch the certificate folder; polling only');
      }
    }
    this.poll = setInterval(() => {
      this.schedule();
    }, this.pollMs);
    this.poll.unref();
  }

  /** Stops watching. */
  stop(): void {
    for (const w of this.watchers) w.close();
    this.watchers = [];
    if (this.poll) clearInterval(this.poll);
  }

  /** Checks the files now (also what the watchers call); resolves when the check is done. */
  check(): Promise<void> {
    this.schedule();
    return this.pending;
  }

  private schedule(): void {
    // Checks run one after another, so a burst of file events costs one reload.
    this.pending = this.pending.then(() => this.reloadIfChanged());
  }

  private async reloadIfChanged(): Promise<void> {
    let material: SecureContextOptions;
    try {
      material = await this.read();
    } catch (error) {
      // Mid-rotation one file may be missing for a moment; the next event retries.
      this.logger.debug({ err: error }, 'certificate files not readable yet');
      return;
    }
    const d = digest(material);
    if (d === this.lastDigest) return;
    try {
      createSecureContext(material);
    } catch (error) {
      // A new certificate with the old key (or the reverse) while files are swapped one by one:
      // keep serving with the old pair and try again on the next change.
      this.onResult('failure', error);
      this.logger.warn(
        { err: error },
        'new certificate and key do not fit together yet; keeping the old pair',
      );
      return;
    }
    this.apply(material);
    this.lastDigest = d;
    this.onResult('success');
    this.logger.info('serving certificate reloaded');
  }

  private async read(): Promise<SecureContextOptions> {
    const [cert, key] = await Promise.all([readFile(this.files.certFile), readFile(this.files.keyFile)]);
    return { cert, key };
  }
}

function digest(m: SecureContextOptions): string {
  return createHash('sha256')
    .update(m.cert as Buffer)
    .update(m.key as Buffer)
    .digest('hex');
}
