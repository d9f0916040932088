import type { Logger } from 'pino';

/** Settings of {@link LogRateLimit}. */
export interface LogRateLimitOptions {
  /** Lines of one kind written per interval (default 5). */
  readonly perInterval?: number;
  /** Length of an interval (default 10 s). */
  readonly intervalMs?: number;
}

interface Window {
  written: number;
  suppressed: number;
  readonly timer: NodeJS.Timeout;
}

/**
 * Rate limit for repeated log lines of one kind (one per request, one per refused client...):
 * the first `perInterval` lines of a kind in an interval are written, the rest only counted, and
 * when the interval ends one line says how many were suppressed. An interval starts with the
 * first line of its kind and ends on a timer, so the limit needs no clock reads and a quiet kind
 * costs nothing. Kinds are the call sites' fixed texts (never request data), so they are few.
 */
export class LogRateLimit {
  private readonly perInterval: number;
  private readonly intervalMs: number;
  private readonly windows = new Map<string, Window>();

  constructor(
    /** Where the summary lines go (the process logger, not one request's child). */
    private readonly logger: Logger,
    o: LogRateLimitOptions = {},
  ) {
    this.perInterval = o.perInterval ?? 5;
    this.intervalMs = o.intervalMs ?? 10_000;
  }

  /**
   * Whether a line of `kind` may be written now; if not it is counted for the summary. Ask before
   * building the line (a request's child logger costs more than the check).
   */
  allow(kind: string): boolean {
    let window = this.windows.get(kind);
    if (!window) {
      const timer = setTimeout(() => {
        this.close(kind);
      }, this.intervalMs);
      timer.unref();
      window = { written: 0, suppressed: 0, timer };
      this.windows.set(kind, window);
    }
    if (window.written < this.perInterval) {
      window.written++;
      return true;
    }
    window.suppressed++;
    return false;
  }

  /** `logger.warn(fields, message)`, unless lines with this message are over the limit. */
  warn(logger: Logger, fields: object, message: string): void {
    if (this.allow(message)) logger.warn(fields, message);
  }

  /** `logger.error(fields, message)`, unless lines with this message are over the limit. */
  error(logger: Logger, fields: object, message: string): void {
    if (this.allow(message)) logger.error(fields, message);
  }

  /** Ends every interval now, writing their summaries (on shutdown). */
  flush(): void {
    for (const kind of [...this.windows.keys()]) this.close(kind);
  }

  private close(kind: string): void {
    const window = this.windows.get(kind);
    if (!window) return;
    clearTimeout(window.timer);
    this.windows.delete(kind);
    if (window.suppressed > 0) {
      this.logger.warn(
        { kind, suppressed: window.suppressed, intervalSeconds: this.intervalMs / 1000 },
        `suppressed ${window.suppressed} more lines: ${kind}`,
      );
    }
  }
}
