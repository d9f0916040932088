// A benchmark child process's entry: its config from the JSON file named on its command line, and
// its main function run with any failure written to stderr and exit code 1.
import { readFileSync } from 'node:fs';

/** The config the parent wrote to the JSON file named by the first argument (`script` for the usage line). */
export function childConfig(script: string): unknown {
  const configPath = process.argv[2];
  if (!configPath) throw new Error(`usage: ${script} <config.json>`);
  return JSON.parse(readFileSync(configPath, 'utf8'));
}

/** Runs `main`; a failure is written to stderr after `label` and ends the process with code 1. */
export function runChild(label: string, main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    process.stderr.write(
      `${label}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  });
}
