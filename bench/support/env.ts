import { pathToFileURL } from 'node:url';

/** A positive number from the environment, or the default (for shorter trial runs). */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${raw}`);
  return value;
}

/**
 * A comma-separated list of integers of at least `min` from the environment, or the default: the
 * sizes or settings a benchmark runs one after the other.
 */
export function envIntegers(name: string, fallback: readonly number[], min = 1): readonly number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const values = raw.split(',').map((s) => Number(s.trim()));
  if (values.some((v) => !Number.isInteger(v) || v < min))
    throw new Error(`${name} must list integers of at least ${min}, got ${raw}`);
  return values;
}

/** Whether the module at `url` is the script node was started with. */
export function isMain(url: string): boolean {
  const script = process.argv[1];
  return script !== undefined && pathToFileURL(script).href === url;
}

/** Prints a line to stdout. */
export function say(line: string): void {
  process.stdout.write(`${line}\n`);
}
