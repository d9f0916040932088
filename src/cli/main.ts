#!/usr/bin/env node
import { errorLine } from '../telemetry/error-line.js';
import { buildProgram } from './program.js';

// The single entry point of `rtb`: parse, run, and turn any failure into one line on stderr and
// an exit at once. At once: a command that failed half-way may have left watches or timers
// running, which would otherwise keep a failed process alive with nothing to do.
buildProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    process.stderr.write(`rtb: ${errorLine(error)}\n`);
    process.exit(process.exitCode && process.exitCode !== 0 ? process.exitCode : 1);
  });
