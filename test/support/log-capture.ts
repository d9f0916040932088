import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/telemetry/logger.js';

/** A real process logger (redaction, truncation) writing into memory. */
export interface CapturedLogs {
  readonly logger: Logger;
  /** The raw lines written so far. */
  readonly raw: string[];
  /** The lines written so far, parsed. */
  readonly lines: () => Record<string, unknown>[];
}

/** A logger as `rtb` makes it (./src/telemetry/logger.ts) whose lines the test can read. */
export function captureLogs(level = 'debug'): CapturedLogs {
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') raw.push(line);
      done();
    },
  });
  const logger = createLogger({ name: 'test', level, destination });
  return { logger, raw, lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}
