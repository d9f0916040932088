#!/usr/bin/env node
import { buildProgram } from './program.js';

// The single entry point of `rtb`: parse, run, and turn any failure into a clean exit status.
buildProgram()
  .parseAsync(process.argv)
  .catch((error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`rtb: ${message}\n`);
    process.exitCode = process.exitCode && process.exitCode !== 0 ? process.exitCode : 1;
  });
