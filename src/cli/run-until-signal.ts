import type { Logger } from 'pino';

/**
 * Waits for SIGTERM or SIGINT, then stops `app` (draining what it serves) and resolves; a
 * failing stop is logged, never thrown, so the process still exits.
 */
export function runUntilSignal(
  app: { stop(): Promise<void> },
  logger: Logger,
  message = 'stopping',
): Promise<void> {
  return new Promise<void>((resolve) => {
    const onSignal = (signal: string): void => {
      logger.info({ signal }, message);
      void app.stop().then(resolve, (error: unknown) => {
        logger.error({ err: error }, 'unclean stop');
        resolve();
      });
    };
    process.once('SIGTERM', () => {
      onSignal('SIGTERM');
    });
    process.once('SIGINT', () => {
      onSignal('SIGINT');
    });
  });
}
