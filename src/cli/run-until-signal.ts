import type { Logger } from 'pino';

/**
 * Waits for SIGTERM or SIGINT, then stops `app` (draining what it serves) and resolves; a
 * failing stop is logged, never thrown, so the process still exits. With `hardStopMs`, a stop
 * that takes longer ends the process (status 1) rather than waiting for the kubelet's SIGKILL.
 */
export function runUntilSignal(
  app: { stop(): Promise<void> },
  logger: Logger,
  message = 'stopping',
  hardStopMs?: number,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const onSignal = (signal: string): void => {
      logger.info({ signal }, message);
      if (hardStopMs !== undefined) {
        setTimeout(() => {
          logger.error({ afterMs: hardStopMs }, 'stop took too long; exiting');
          process.exit(1);
        }, hardStopMs).unref();
      }
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
