import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import {
  ConfigError,
  readWebhookConfig,
  type ConfigIssue,
  type WebhookConfig,
} from '../api/webhook-config.js';
import type { WebhookMetrics } from './webhook-metrics.js';

/** Outcome of offering a new configuration text. */
export type ConfigOffer =
  | {
      readonly accepted: true;
      readonly changed: boolean;
      readonly digest: string;
      /** What is doubtful in the text (logged once, when the text is taken into force). */
      readonly warnings: readonly ConfigIssue[];
    }
  | { readonly accepted: false; readonly error: ConfigError };

/** Refused texts remembered at once (a bad text offered again is not read, counted or logged again). */
const REFUSED_REMEMBERED = 16;

/**
 * Holds the configuration in force. A new text replaces it only if it is valid; a bad one is
 * refused, logged with the offending fields and counted, and the last good one stays. Each
 * content is judged once: sources offer the same text again and again (a file watcher fires
 * several events per write, a poll re-reads it every few seconds), and a refusal is counted and
 * logged only the first time its text is offered since the configuration in force was taken.
 */
export class ConfigHolder {
  private current: WebhookConfig | undefined;
  private currentDigest = '';
  private currentRevision: string | undefined;
  private generation = 0;
  private readonly listeners: ((config: WebhookConfig) => void)[] = [];
  /** Refusals by text digest since the last accepted text, oldest first. */
  private readonly refused = new Map<string, ConfigError>();

  constructor(
    private readonly logger: Logger,
    private readonly metrics?: WebhookMetrics,
    /** This webhook's `--landscape`, if any; it wins over the config's `landscape`. */
    private readonly landscape?: string,
  ) {}

  /** The configuration in force, or undefined before the first good one. */
  get(): WebhookConfig | undefined {
    return this.current;
  }

  /** A short digest of the text in force (for logs and status). */
  get digest(): string {
    return this.currentDigest;
  }

  /**
   * The set version the text in force was last offered under (the runtime's objects make it up:
   * ./set-revision.ts): the revision Pods changed under it carry. Undefined for a file, a
   * ConfigMap not written by the KCP, or while a part of the set is not read yet.
   */
  get revision(): string | undefined {
    return this.currentRevision;
  }

  /** Called after every accepted change. */
  onChange(listener: (config: WebhookConfig) => void): void {
    this.listeners.push(listener);
  }

  /**
   * Offers the JSON text from `source` (a file path or ConfigMap key, for logs), of set `revision`
   * where the source has one. The same text under a new set (only the Secret or bundle changed)
   * takes the new revision.
   */
  offer(text: string, source: string, revision?: string): ConfigOffer {
    const digest = createHash('sha256').update(text).digest('hex').slice(0, 16);
    if (digest === this.currentDigest) {
      this.currentRevision = revision;
      this.metrics?.configRefused.set(0);
      return { accepted: true, changed: false, digest, warnings: [] };
    }
    const known = this.refused.get(digest);
    if (known) {
      // Offered again after another text: it is the latest one read, and still refused.
      this.metrics?.configRefused.set(1);
      return { accepted: false, error: known };
    }
    let config: WebhookConfig;
    let warnings: readonly ConfigIssue[];
    try {
      ({ config, warnings } = readWebhookConfig(text, { runtime: { landscape: this.landscape } }));
    } catch (error) {
      const configError =
        error instanceof ConfigError
          ? error
          : new ConfigError([{ path: '(root)', message: String(error) }], { cause: error });
      if (this.refused.size >= REFUSED_REMEMBERED) {
        const oldest = this.refused.keys().next();
        if (!oldest.done) this.refused.delete(oldest.value);
      }
      this.refused.set(digest, configError);
      this.metrics?.configReloads.inc({ result: 'failure' });
      this.metrics?.configRefused.set(1);
      this.logger.error(
        { source, digest, issues: configError.issues, keptDigest: this.currentDigest || undefined },
        'configuration refused; the last good configuration stays in force',
      );
      return { accepted: false, error: configError };
    }
    this.current = config;
    this.currentDigest = digest;
    this.currentRevision = revision;
    // A text refused before this one counts again if it comes back: it is a new attempt.
    this.refused.clear();
    this.generation++;
    this.metrics?.configReloads.inc({ result: 'success' });
    this.metrics?.configGeneration.set(this.generation);
    this.metrics?.configRefused.set(0);
    this.logger.info({ source, digest, generation: this.generation }, 'configuration loaded');
    // Once per accepted content: an unchanged text returns above before it is read again.
    for (const warning of warnings) {
      this.logger.warn({ source, digest, field: warning.path }, `configuration: ${warning.message}`);
    }
    for (const l of this.listeners) l(config);
    return { accepted: true, changed: true, digest, warnings };
  }
}
