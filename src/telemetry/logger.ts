import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

/**
 * Keys whose values never reach a log line: Secret payloads, credentials, keys and tokens.
 * pino applies this at serialisation, so a careless `log.info({ secret })` is still safe.
 */
export const REDACTED_PATHS = [
  'data',
  'stringData',
  '*.data',
  '*.stringData',
  '*.*.data',
  '*.*.stringData',
  'secret.data',
  'token',
  '*.token',
  'password',
  '*.password',
  'key',
  '*.key',
  'keyPem',
  '*.keyPem',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  '.dockerconfigjson',
];

/** Options for the process logger. */
export interface LoggerSetup {
  level?: string;
  name?: string;
  /** Write to this stream instead of stdout (tests). */
  destination?: NodeJS.WritableStream;
}

/** A JSON logger (pino) with secret redaction and ISO timestamps. */
export function createLogger(setup: LoggerSetup = {}): Logger {
  const options: LoggerOptions = {
    level: setup.level ?? process.env.RTB_LOG_LEVEL ?? 'info',
    base: { component: setup.name ?? 'rtb' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    formatters: {
      level: (label) => ({ level: label }),
    },
  };
  return setup.destination ? pino(options, setup.destination) : pino(options);
}

/** A logger that drops everything (tests and benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
