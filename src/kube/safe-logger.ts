/**
 * The logger shape the kube primitives accept, and a wrapper that makes logging best
 * effort: a throwing logger must not reject a background loop (an unhandled rejection).
 */

/** Minimal structured logger; pino's `Logger` fits. */
export interface KubeLogger {
  debug(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** `logger` with exceptions swallowed; a silent logger when undefined. */
export function safeLogger(logger: KubeLogger | undefined): KubeLogger {
  const call = (level: 'debug' | 'warn', obj: object, msg: string): void => {
    try {
      logger?.[level](obj, msg);
    } catch {
      // Nothing sensible left to do with a log line that cannot be written.
    }
  };
  return {
    debug: (obj, msg) => {
      call('debug', obj, msg);
    },
    warn: (obj, msg) => {
      call('warn', obj, msg);
    },
  };
}
