import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import type { ConfigHolder } from './config-holder.js';

/**
 * Feeds a config file into the holder and re-reads it on change (a mounted ConfigMap swaps a
 * symlink in its folder, so the folder is watched; a slow poll covers file systems without events).
 */
export class FileConfigSource {
  private watcher: FSWatcher | undefined;
  private poll: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  /** The read failure logged last; the same failure again (every poll) is not logged again. */
  private readFailure: string | undefined;

  constructor(
    private readonly path: string,
    private readonly holder: ConfigHolder,
    private readonly logger: Logger,
    private readonly pollMs = 5_000,
  ) {}

  /**
   * Reads the file once and starts watching it. A file that cannot be read at start is fatal
   * (the flag names a file that is not there); later read failures keep the last good config.
   */
  async start(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (cause) {
      throw new Error(
        `cannot read the config file: ${cause instanceof Error ? cause.message : String(cause)}`,
        {
          cause,
        },
      );
    }
    this.holder.offer(text, this.path);
    try {
      this.watcher = watch(dirname(this.path), () => {
        this.schedule();
      });
      this.watcher.on('error', () => undefined);
      this.watcher.unref();
    } catch (error) {
      this.logger.warn({ err: error }, 'cannot watch the config folder; polling only');
    }
    this.poll = setInterval(() => {
      this.schedule();
    }, this.pollMs);
    this.poll.unref();
  }

  /** Stops watching. */
  stop(): void {
    this.watcher?.close();
    if (this.poll) clearInterval(this.poll);
  }

  /** Re-reads now; resolves when done (also what the watchers call). */
  reload(): Promise<void> {
    this.schedule();
    return this.chain;
  }

  private schedule(): void {
    this.chain = this.chain.then(async () => {
      let text: string;
      try {
        text = await readFile(this.path, 'utf8');
      } catch (error) {
        const failure = error instanceof Error ? error.message : String(error);
        if (failure !== this.readFailure)
          this.logger.warn(
            { err: error, path: this.path },
            'cannot read the config file; keeping the last good one',
          );
        this.readFailure = failure;
        return;
      }
      this.readFailure = undefined;
      this.holder.offer(text, this.path);
    });
  }
}
