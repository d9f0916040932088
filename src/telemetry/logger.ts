import {
  pino,
  stdSerializers,
  type Bindings,
  type ChildLoggerOptions,
  type Logger,
  type LoggerOptions,
} from 'pino';
import { LOG_LIMITS, truncateFields, truncateString, truncateValue } from './truncate-fields.js';

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

/** Longest line written as it is; a longer one (a field no other bound caught) is cut down again. */
const MAX_LINE = 64 * 1024;

/** pino's error serializer with the message cut like any field, and the stack to a few KiB. */
function boundedError(error: unknown): unknown {
  const serialized = stdSerializers.err(error as Error) as unknown;
  if (typeof serialized !== 'object' || serialized === null) return serialized;
  const { stack, ...rest } = serialized as Record<string, unknown>;
  return {
    ...(truncateValue(rest) as Record<string, unknown>),
    stack: typeof stack === 'string' ? truncateString(stack, 4096) : undefined,
  };
}

/**
 * A JSON logger (pino) with secret redaction and ISO timestamps, whose lines are bounded
 * (./truncate-fields.ts) in one place, so no call site can forget: the fields of each line, the
 * bindings of every child logger, the message and its arguments, and error messages; a line
 * still longer than 64 KiB is parsed and cut down again before it is written.
 */
export function createLogger(setup: LoggerSetup = {}): Logger {
  const options: LoggerOptions = {
    level: setup.level ?? process.env.RTB_LOG_LEVEL ?? 'info',
    base: { component: setup.name ?? 'rtb' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: { err: boundedError },
    formatters: {
      level: (label) => ({ level: label }),
      log: (fields) => truncateFields(fields),
    },
    hooks: {
      logMethod(args, method) {
        for (let i = 0; i < args.length; i++) {
          const arg: unknown = args[i];
          if (typeof arg === 'string') args[i] = truncateString(arg);
        }
        method.apply(this, args);
      },
      streamWrite: (line) => (line.length <= MAX_LINE ? line : reboundLine(line)),
    },
  };
  const root = setup.destination ? pino(options, setup.destination) : pino(options);
  // pino applies no formatter to a child's bindings, and request data often goes there (a
  // request's namespace and name): every child, at any depth, inherits this `child` from the root.
  const child = Reflect.get(root, 'child') as unknown as ChildMethod;
  const boundedChild: ChildMethod = function (bindings, childOptions) {
    return child.call(this, truncateFields(bindings), childOptions);
  };
  Object.defineProperty(root, 'child', { value: boundedChild, writable: true, configurable: true });
  return root;
}

type ChildMethod = (this: Logger, bindings: Bindings, options?: ChildLoggerOptions) => Logger;

function reboundLine(line: string): string {
  try {
    const bounded = truncateValue(JSON.parse(line), { ...LOG_LIMITS, maxString: 1024 });
    return `${JSON.stringify(bounded)}\n`;
  } catch {
    return `${JSON.stringify({ level: 'error', msg: truncateString(line, 1024) })}\n`;
  }
}

/** A logger that drops everything (tests and benchmarks). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
